#include "stages/hidden_wakeups.hpp"

#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>

namespace posixtrace {

void HiddenWakeups::track(const pt_record &record, const pt_td_data &about)
{
    uint32_t td = POSIX_TRACE_TD_EVENT_OF(record.event_id);
    if (td == PT_TD_SLEEP)
        asleep_since_[about.tid] = record.timestamp_ns;
    else if (td == PT_TD_READY || td == PT_TD_SWITCHTO || td == PT_TD_DEATH)
        asleep_since_.erase(about.tid); // woken, or seen running: settled
}

bool HiddenWakeups::woken_unseen(const pt_record &report)
{
    auto found = asleep_since_.find(pid_t(report.tid));
    if (found == asleep_since_.end())
        return false;
    bool trusted = found->second > trusted_after_ns_;
    asleep_since_.erase(found);
    return trusted;
}

} // namespace posixtrace
