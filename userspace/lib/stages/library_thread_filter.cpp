#include "stages/library_thread_filter.hpp"

#include <posix_trace/thread_db.h>

#include <algorithm>
#include <cstring>

namespace posixtrace {

bool LibraryThreadFilter::hides(const pt_record &record, const uint8_t *data, RecordKind kind) const
{
    if (record.cpu == PT_CPU_SYSTEM || pid_t(record.pid) != creator_ ||
        kind == RecordKind::UserEvent)
        return false;
    if (kind != RecordKind::ThreadEvent || record.data_len != sizeof(pt_td_data))
        return threads_.hides(pid_t(record.tid), record.timestamp_ns, nullptr);
    pt_td_data about;
    std::memcpy(&about, data, sizeof about);
    char name[sizeof about.name + 1] = {};
    std::memcpy(name, about.name, sizeof about.name);
    if (threads_.hides(about.tid, record.timestamp_ns, name))
        return true;
    if (about.tid != pid_t(record.tid) &&
        threads_.hides(pid_t(record.tid), record.timestamp_ns, nullptr))
        return true;
    if (record.event_id == POSIX_TRACE_TD_EVENT_ID(PT_TD_CREATE))
        return threads_.hides(pid_t(about.value), record.timestamp_ns, nullptr);
    return false;
}

std::optional<pt_td_data> LibraryThreadFilter::corrected_concurrency(const pt_record &record,
                                                                     const uint8_t *data) const
{
    if (record.event_id != POSIX_TRACE_TD_EVENT_ID(PT_TD_CONCURRENCY) ||
        pid_t(record.pid) != creator_ || record.data_len != sizeof(pt_td_data))
        return std::nullopt;
    pt_td_data counted;
    std::memcpy(&counted, data, sizeof counted);
    counted.value -= std::min<uint64_t>(counted.value, threads_.alive_at(record.timestamp_ns));
    return counted;
}

} // namespace posixtrace
