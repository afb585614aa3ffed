#include "timeline.hpp"

#include <posix_trace/events.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "../event_format.hpp"

namespace posixtrace::cli {
namespace {

bool is_marker_event(trace_event_id_t id)
{
    return id >= POSIX_TRACE_USER_EVENT_FIRST || id == POSIX_TRACE_UNNAMED_USEREVENT;
}

std::string thread_name_of(const td_event_data &data)
{
    return std::string(data.name, strnlen(data.name, sizeof data.name));
}

std::string exit_text(int wait_status)
{
    if (WIFSIGNALED(wait_status))
        return "killed by signal " + std::to_string(WTERMSIG(wait_status));
    return "exit " + std::to_string(WEXITSTATUS(wait_status));
}

} // namespace

const char *state_name(LaneState state)
{
    static const char *const kNames[] = {"running", "runnable", "sleeping", "waiting for a lock",
                                         "stopped", "exited"};
    return kNames[size_t(state)];
}

Lane &Timeline::lane(pid_t pid, pid_t tid)
{
    auto [found, added] = lanes_.try_emplace(tid);
    Lane &lane = found->second;
    if (added) {
        lane.pid = pid;
        lane.tid = tid;
    }
    process_names_.try_emplace(pid);
    return lane;
}

void Timeline::add(const LoggedEvent &event)
{
    uint64_t absolute = timestamp_ns(event.info);
    if (!any_) {
        first_ns_ = absolute;
        any_ = true;
    }
    last_ns_ = std::max(last_ns_, absolute);
    uint64_t ns = absolute - first_ns_;
    ++events_;
    ++counts_[event.name];
    trace_event_id_t id = event.info.posix_event_id;
    pid_t pid = event.info.posix_pid, tid = event.info.posix_tid;

    td_event_data data;
    if (auto td = thread_event_of(id); td && event.length >= sizeof data) {
        std::memcpy(&data, event.data, sizeof data);
        apply_thread_event(*td, data, pid, absolute, ns);
    } else if (id == POSIX_TRACE_OVERFLOW && event.length >= sizeof(posix_trace_overflow_data)) {
        posix_trace_overflow_data loss;
        std::memcpy(&loss, event.data, sizeof loss);
        lost_ += loss.lost;
        losses_.push_back({ns, tid, loss.lost, loss.lost_in_kernel, loss.lost_in_stream});
    } else if (id >= POSIX_TRACE_PROCESS_FORK && id <= POSIX_TRACE_PROCESS_EXIT) {
        add_process_mark(event, ns);
    } else if (is_marker_event(id) && tid != 0) {
        add_marker(lane(pid, tid), event, ns);
    }
}

// The thread table (what `posixtrace threads` shows) follows each thread's
// state; its lane draws what the table says, span by span.
void Timeline::apply_thread_event(td_event_e event, const td_event_data &data, pid_t pid,
                                  uint64_t absolute_ns, uint64_t ns)
{
    threads_.apply(event, data, absolute_ns);
    Lane &thread = lane(pid, data.tid);
    note_name(thread, thread_name_of(data));
    follow_thread_table(thread, ns);
    if (event == TD_CREATE)
        follow_thread_table(lane(pid, pid_t(data.value)), ns);
    else if (event == TD_CATCHSIG)
        push_marker(thread, kind_index("td_catchsig"), ns,
                    [&] { return "signal " + std::to_string(data.value) + " delivered"; });
}

void Timeline::note_name(Lane &lane, const std::string &name)
{
    if (name.empty() || name == lane.name)
        return;
    if (!lane.name.empty() &&
        std::find(lane.renames.begin(), lane.renames.end(), lane.name) == lane.renames.end())
        lane.renames.push_back(lane.name);
    lane.name = name;
}

void Timeline::follow_thread_table(Lane &lane, uint64_t ns)
{
    const ThreadRow *row = threads_.current(lane.tid);
    if (!row)
        return;
    if (lane.name.empty())
        lane.name = row->name; // a new thread starts with its creator's name
    static const std::map<char, LaneState> kStates = {
        {'R', LaneState::running}, {'W', LaneState::runnable}, {'S', LaneState::sleeping},
        {'L', LaneState::locked},  {'T', LaneState::stopped},  {'X', LaneState::exited}};
    auto state = kStates.find(row->state);
    if (state == kStates.end())
        return; // not known yet
    enter(lane, state->second, state->second == LaneState::running ? row->cpu : -1, ns);
}

// A thread's state changes at `ns`: the open span closes there.
void Timeline::enter(Lane &lane, LaneState state, int cpu, uint64_t ns)
{
    bool changed = !lane.known || lane.state != state || lane.cpu != cpu;
    if (!changed)
        return;
    if (lane.known && ns > lane.since_ns)
        lane.spans.push_back({lane.since_ns, ns, lane.state, int16_t(lane.cpu)});
    lane.since_ns = ns;
    lane.state = state;
    lane.cpu = cpu;
    lane.known = true;
}

void Timeline::add_marker(Lane &lane, const LoggedEvent &event, uint64_t ns)
{
    push_marker(lane, kind_index(event.name), ns, [&] {
        std::string text = format_text(event.info, event.name, event.data, event.length);
        if (text.size() > limits_.detail_bytes)
            text = text.substr(0, limits_.detail_bytes) + "...";
        return text;
    });
}

// Past the limit only the time is kept, for the density of aggregate_markers().
void Timeline::push_marker(Lane &lane, uint32_t kind, uint64_t ns,
                           const std::function<std::string()> &detail)
{
    if (++markers_ > limits_.markers) {
        lane.late_markers.push_back(ns);
        return;
    }
    lane.markers.push_back({ns, kind, uint32_t(details_.size())});
    details_.push_back(detail());
}

void Timeline::add_process_mark(const LoggedEvent &event, uint64_t ns)
{
    pid_t pid = event.info.posix_pid;
    process_names_.try_emplace(pid);
    trace_event_id_t id = event.info.posix_event_id;
    if (id == POSIX_TRACE_PROCESS_FORK && event.length >= sizeof(posix_trace_process_fork_data)) {
        posix_trace_process_fork_data fork;
        std::memcpy(&fork, event.data, sizeof fork);
        process_marks_.push_back(
            {ns, pid, "fork", "created process " + std::to_string(fork.child_pid)});
    } else if (id == POSIX_TRACE_PROCESS_EXEC &&
               event.length > sizeof(posix_trace_process_exec_data)) {
        const char *path =
            reinterpret_cast<const char *>(event.data) + sizeof(posix_trace_process_exec_data);
        std::string file(path, strnlen(path, event.length - sizeof(posix_trace_process_exec_data)));
        process_names_[pid] = file;
        process_marks_.push_back({ns, pid, "exec", file});
    } else if (id == POSIX_TRACE_PROCESS_EXIT &&
               event.length >= sizeof(posix_trace_process_exit_data)) {
        posix_trace_process_exit_data exit;
        std::memcpy(&exit, event.data, sizeof exit);
        process_marks_.push_back({ns, pid, "exit", exit_text(exit.wait_status)});
    }
}

uint32_t Timeline::kind_index(const std::string &name)
{
    auto [found, added] = kind_ids_.try_emplace(name, uint32_t(kinds_.size()));
    if (added)
        kinds_.push_back(name);
    return found->second;
}

void Timeline::finish()
{
    uint64_t end = span_ns();
    size_t spans = 0;
    for (auto &[tid, lane] : lanes_) {
        if (lane.known && end > lane.since_ns)
            lane.spans.push_back({lane.since_ns, end, lane.state, int16_t(lane.cpu)});
        if (lane.spans.size() > limits_.spans_per_lane)
            aggregate_spans(lane);
        spans += lane.spans.size();
    }
    // The page stays small: the busiest lanes give way first.
    while (spans > limits_.spans) {
        auto busiest = std::max_element(lanes_.begin(), lanes_.end(), [](auto &a, auto &b) {
            return a.second.spans.size() < b.second.spans.size();
        });
        if (busiest->second.spans.size() <= limits_.buckets)
            break;
        spans -= busiest->second.spans.size();
        aggregate_spans(busiest->second);
        spans += busiest->second.spans.size();
    }
    if (markers_ > limits_.markers)
        aggregate_markers();
    for (auto &[pid, name] : process_names_) {
        if (!name.empty())
            continue;
        auto main_thread = lanes_.find(pid);
        name = main_thread != lanes_.end() && !main_thread->second.name.empty()
                   ? main_thread->second.name
                   : "pid " + std::to_string(pid);
    }
    // A thread seen only through its user or USDT events has no name of its
    // own: the main thread goes by its process's.
    for (auto &[tid, lane] : lanes_)
        if (lane.name.empty())
            lane.name = tid == lane.pid ? process_names_[lane.pid] : "thread";
}

// Too many spans to draw one by one: each bucket of the whole span shows
// the state the thread spent most of that time in.
void Timeline::aggregate_spans(Lane &lane)
{
    size_t buckets = limits_.buckets;
    double width = double(std::max<uint64_t>(span_ns(), 1)) / double(buckets);
    std::vector<std::array<uint64_t, 6>> time_in(buckets, std::array<uint64_t, 6>{});
    std::vector<int16_t> cpu(buckets, -1);
    for (const StateSpan &span : lane.spans) {
        for (size_t b = size_t(double(span.begin_ns) / width);
             b < buckets && double(b) * width < double(span.end_ns); ++b) {
            double from = std::max(double(span.begin_ns), double(b) * width);
            double to = std::min(double(span.end_ns), double(b + 1) * width);
            if (to > from)
                time_in[b][size_t(span.state)] += uint64_t(to - from);
            if (span.state == LaneState::running)
                cpu[b] = span.cpu;
        }
    }
    std::vector<StateSpan> merged;
    for (size_t b = 0; b < buckets; ++b) {
        auto most = std::max_element(time_in[b].begin(), time_in[b].end());
        if (*most == 0)
            continue;
        auto state = LaneState(most - time_in[b].begin());
        auto begin = uint64_t(double(b) * width), end = uint64_t(double(b + 1) * width);
        int16_t on = state == LaneState::running ? cpu[b] : int16_t(-1);
        if (!merged.empty() && merged.back().state == state && merged.back().cpu == on &&
            merged.back().end_ns == begin)
            merged.back().end_ns = end;
        else
            merged.push_back({begin, end, state, on});
    }
    lane.spans = std::move(merged);
    ++lanes_aggregated_;
}

// Too many markers to draw one by one: each lane gets the number of its
// markers per bucket instead, and no tooltips.
void Timeline::aggregate_markers()
{
    double width = double(std::max<uint64_t>(span_ns(), 1)) / double(limits_.buckets);
    for (auto &entry : lanes_) {
        Lane &lane = entry.second;
        lane.marker_density.assign(limits_.buckets, 0);
        auto count = [&](uint64_t ns) {
            ++lane.marker_density[std::min(limits_.buckets - 1, size_t(double(ns) / width))];
        };
        for (const Marker &marker : lane.markers)
            count(marker.at_ns);
        for (uint64_t ns : lane.late_markers)
            count(ns);
        lane.markers.clear();
        lane.late_markers.clear();
    }
    details_.clear();
    markers_aggregated_ = true;
}

std::string Timeline::aggregation_note() const
{
    std::string note;
    if (lanes_aggregated_)
        note += std::to_string(lanes_aggregated_) +
                " thread(s) changed state too often to draw each change: their lanes show the "
                "state they were in most, per 1/" +
                std::to_string(limits_.buckets) + " of the trace. ";
    if (markers_aggregated_)
        note += "More than " + std::to_string(limits_.markers) +
                " events to mark: each lane shows how many it had, per 1/" +
                std::to_string(limits_.buckets) + " of the trace, without details.";
    return note;
}

} // namespace posixtrace::cli
