#pragma once
// What `posixtrace report` draws, built in one pass over a trace log: a
// lane per thread with its states over time (from the TD events), the user,
// USDT and signal events as markers on their lane, the process marks
// (fork, exec, exit), the losses, and a summary. Fed in timestamp order.
#include <posix_trace/thread_db.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../logged_event.hpp"
#include "../threads/thread_table.hpp"

namespace posixtrace::cli {

// A thread's state, as its lane shows it.
enum class LaneState : uint8_t {
    running,  // on a CPU
    runnable, // woken or preempted, waiting for a CPU
    sleeping, // blocked
    locked,   // blocked on a contended lock (after td_lock_try)
    stopped,  // stopped by a signal or a tracer
    exited,
};

struct StateSpan {
    uint64_t begin_ns; // relative to the first event
    uint64_t end_ns;
    LaneState state;
    int16_t cpu; // running: the CPU; else -1
};

struct Marker {
    uint64_t at_ns;
    uint32_t kind;   // index into Timeline::kinds()
    uint32_t detail; // index into Timeline::details()
};

struct Lane {
    pid_t pid = 0;
    pid_t tid = 0;
    std::string name;                 // the thread's latest name (comm)
    std::vector<std::string> renames; // every other name it had
    std::vector<StateSpan> spans;
    std::vector<Marker> markers;
    std::vector<uint64_t> late_markers;   // past TimelineLimits::markers: times only
    std::vector<uint32_t> marker_density; // aggregated: markers per bucket
    // The open span.
    LaneState state = LaneState::runnable;
    int cpu = -1;
    uint64_t since_ns = 0;
    bool known = false; // a TD event told its state
    bool waiting_for_lock = false;
};

struct ProcessMark {
    uint64_t at_ns;
    pid_t pid;
    std::string kind; // fork, exec, exit
    std::string text;
};

struct LossMark {
    uint64_t at_ns;
    pid_t tid; // 0: not about one thread
    uint64_t lost, in_kernel, in_stream;
};

// What keeps the page of a 10-million-event log under 20 MB: about 30
// bytes a span, 25 a marker and its tooltip's text.
struct TimelineLimits {
    size_t spans_per_lane = 20'000; // more: aggregated into buckets
    size_t spans = 300'000;         // more in all: the busiest lanes are aggregated
    size_t markers = 50'000;        // more in all: density per bucket
    size_t buckets = 2'000;         // across the whole span
    size_t detail_bytes = 120;      // text kept for a marker's tooltip
};

class Timeline {
public:
    explicit Timeline(TimelineLimits limits = {}) : limits_(limits) {}

    void add(const LoggedEvent &event);
    // Closes the open spans at the last event and aggregates what is
    // beyond the limits. Call once, after the last add().
    void finish();

    uint64_t first_ns() const { return first_ns_; }
    uint64_t span_ns() const { return last_ns_ - first_ns_; }
    uint64_t events() const { return events_; }
    uint64_t lost() const { return lost_; }
    const std::map<pid_t, Lane> &lanes() const { return lanes_; }
    const std::map<pid_t, std::string> &processes() const { return process_names_; }
    const std::vector<ProcessMark> &process_marks() const { return process_marks_; }
    const std::vector<LossMark> &losses() const { return losses_; }
    const std::vector<std::string> &kinds() const { return kinds_; }
    const std::vector<std::string> &details() const { return details_; }
    const std::map<std::string, uint64_t> &counts_by_type() const { return counts_; }
    const ThreadTable &threads() const { return threads_; }
    size_t buckets() const { return limits_.buckets; }
    // What was aggregated, said on the page; empty when nothing was.
    std::string aggregation_note() const;

private:
    Lane &lane(pid_t pid, pid_t tid);
    void apply_thread_event(td_event_e event, const td_event_data &data, pid_t pid,
                            uint64_t absolute_ns, uint64_t ns);
    void note_name(Lane &lane, const std::string &name);
    void follow_thread_table(Lane &lane, uint64_t ns);
    void enter(Lane &lane, LaneState state, int cpu, uint64_t ns);
    void add_marker(Lane &lane, const LoggedEvent &event, uint64_t ns);
    void push_marker(Lane &lane, uint32_t kind, uint64_t ns,
                     const std::function<std::string()> &detail);
    void add_process_mark(const LoggedEvent &event, uint64_t ns);
    uint32_t kind_index(const std::string &name);
    void aggregate_spans(Lane &lane);
    void aggregate_markers();

    TimelineLimits limits_;
    uint64_t first_ns_ = 0, last_ns_ = 0;
    bool any_ = false;
    uint64_t events_ = 0, lost_ = 0;
    std::map<pid_t, Lane> lanes_;
    std::map<pid_t, std::string> process_names_;
    std::vector<ProcessMark> process_marks_;
    std::vector<LossMark> losses_;
    std::vector<std::string> kinds_;
    std::map<std::string, uint32_t> kind_ids_;
    std::vector<std::string> details_;
    std::map<std::string, uint64_t> counts_;
    ThreadTable threads_;
    size_t markers_ = 0;
    size_t lanes_aggregated_ = 0;
    bool markers_aggregated_ = false;
};

const char *state_name(LaneState state);

} // namespace posixtrace::cli
