#pragma once
#include <sys/types.h>

#include <cstdint>
#include <unordered_map>

#include "posixtrace.h"

namespace posixtrace {

// Which threads went to sleep (td_sleep) and have not been seen woken
// (td_ready) since, so that the kernel's report of a thread it found
// running without having seen it switched in can count the wakeup it hid
// too: the kernels that skip sched_switch skip sched_wakeup with it
// (measured: every td_ready missing in the sleeper test came with a hidden
// switch-in). Only kept where both events are recorded for every thread,
// and never across a gap in recording (a stop, a filter change, a loss),
// where the wakeup may simply not have been recorded.
class HiddenWakeups {
public:
    // A thread event of a thread whose sleeps and wakeups are all recorded.
    void track(const pt_record &record, const pt_td_data &about);
    // The kernel's report about thread `report.tid`: true when the wakeup
    // it hid is to be counted in it.
    bool woken_unseen(const pt_record &report);
    // A gap in recording at `now_ns` (monotonic): sleeps seen before it say
    // nothing of the wakeups after it.
    void distrust_until(uint64_t now_ns) { trusted_after_ns_ = now_ns; }
    void forget_all() { asleep_since_.clear(); }

private:
    std::unordered_map<pid_t, uint64_t> asleep_since_;
    uint64_t trusted_after_ns_ = 0;
};

} // namespace posixtrace
