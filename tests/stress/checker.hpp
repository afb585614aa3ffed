// The stress harness's oracles, checked event by event as the events are
// read (memory stays proportional to the number of threads, so a run can
// last for hours):
// - timestamps never decrease;
// - each emitter's sequences (main loop, signal handler, USDT ticks) only
//   grow, with gaps only where losses reported before them cover the gaps
//   (the gaps so far never exceed the losses reported so far);
// - no user event between a stop event and the next start event, none of a
//   type the latest filter event filters out;
// - td_switchto and td_switchfrom alternate for every thread, except where a
//   loss was reported in between;
// and at the end, against what the workload counted:
// - emitted = delivered + reported lost, exactly, when the stream records
//   only the emitters' events (otherwise delivered + lost >= emitted);
// - each emitter's switches = the kernel's count for it (/proc), less the
//   switches the kernel did not report, each reported about that thread;
// - one process_fork per fork, one td_create per thread created.
#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workload.hpp"

namespace stress {

struct CheckerOptions {
    trace_event_id_t user_event = 0;
    trace_event_id_t usdt_event = 0;  // 0: none attached
    bool only_emitter_events = false; // the stream records nothing else: exact accounting
    bool thread_events = false;       // TD events recorded: check switches
    bool controls_storm = false;      // stop/start/filter changes: gaps need no loss
    bool clears = false;              // posix_trace_clear too: starts, stops and filter
                                      // events may vanish unseen
    trace_event_set_t initial_filter{};
};

class Checker {
public:
    explicit Checker(const CheckerOptions &options);

    void on_event(const posix_trace_event_info &info, const void *data, size_t length);
    // The final accounting against what the workload did and what the
    // stream counted as lost (posix_trace_get_counters; an UNTIL_FULL stream
    // stopped while full reports its refusals only at its next start).
    // Returns the violations (empty: all good).
    std::vector<std::string> finish(const WorkloadCounts &counts, uint64_t counted_lost);

    uint64_t events() const { return events_; }
    uint64_t lost() const { return lost_; }
    std::string summary() const;

private:
    struct Sequence {
        int64_t last = -1; // last number seen
        uint64_t delivered = 0;
    };
    struct ThreadSwitches {
        bool on_cpu = false;
        bool seen = false;
        uint64_t lost_at_last = 0;
        uint64_t last_ts = 0;
        uint64_t to = 0, from = 0, sleep_or_preempt = 0;
        uint64_t hidden_in = 0, hidden_out = 0; // reported about this thread
        uint64_t unplaced_lost = 0;             // a report not placed yet
    };

    void violation(const std::string &what);
    void check_sequence(Sequence &sequence, uint64_t number, const char *name, uint32_t emitter);
    void on_user_event(const void *data, size_t length);
    void on_usdt_event(const void *data, size_t length);
    void on_thread_event(const posix_trace_event_info &info);
    static void place_report(ThreadSwitches &thread, bool next_is_switchfrom);
    void on_overflow(const posix_trace_event_info &info, const void *data, size_t length);
    void on_resume(const posix_trace_event_info &info);
    void check_switch_counts(const WorkloadCounts &counts, bool exact);

    CheckerOptions options_;
    uint64_t events_ = 0, last_ts_ = 0, lost_ = 0, lost_about_threads_ = 0, gaps_ = 0;
    // Unknown after a loss: the lost events may have been starts or stops.
    enum class State { Stopped, Running, Unknown } state_ = State::Stopped;
    trace_event_set_t filter_;
    bool filter_known_ = true;
    // The windows the stream's loss reports open (overflow event) and close
    // (resume event); a report about one thread has a resume too, not a
    // window.
    uint64_t windows_open_ = 0, thread_resumes_due_ = 0;
    uint64_t last_window_end_ts_ = 0; // the latest resume that closed one
    Sequence main_[kMaxEmitters], handler_[kMaxEmitters], usdt_[kMaxEmitters];
    std::map<pid_t, ThreadSwitches> switches_;
    uint64_t forks_ = 0, creates_ = 0, overflows_ = 0;
    uint64_t starts_ = 0, stops_by_call_ = 0;
    bool stopped_full_ = false; // the latest start or stop was a stop because full
    uint64_t violations_ = 0;
    std::vector<std::string> first_violations_;
    // The latest events, shown with the first violation.
    struct Seen {
        uint64_t ts;
        trace_event_id_t id;
        pid_t tid;
        uint64_t detail; // a user event's sequence number, an overflow's count
    };
    std::vector<Seen> recent_;
    size_t recent_next_ = 0;
};

} // namespace stress
