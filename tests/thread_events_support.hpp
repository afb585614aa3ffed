// What the thread event tests share (test_thread_events.cpp,
// test_thread_agent.cpp): the workload helper program, a stream of it,
// its thread events as read, what the stream reported lost, and the
// kernel's own counters of a thread's switches.
#pragma once
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace thread_events_support {

using namespace test_support;

inline std::string workload_path()
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    REQUIRE(n > 0);
    std::string self(path, size_t(n));
    return self.substr(0, self.rfind('/')) + "/helpers/thread_workload";
}

// A running stream on `pid` that records the thread events (and the rest).
inline StreamGuard thread_stream(pid_t pid)
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 16u << 20) == 0);
    trace_id_t trid = 0;
    REQUIRE(posix_trace_create(pid, &attr, &trid) == 0);
    posix_trace_attr_destroy(&attr);
    return StreamGuard(trid);
}

struct TdEvent {
    td_event_e event;
    td_event_data data;
};

// What a stream reported lost: switches the kernel made without firing
// sched_switch, each reported about its thread (some kernels do; 1 lost: a
// switch-in, td_switchto; more: a switch-out, td_switchfrom and td_sleep or
// td_preempt), and anything else.
// What the stream reported lost. The kernel's reports about one thread say
// what it hid of that thread's scheduling: a switch-in (reported just before
// the thread's td_switchfrom, with its wakeup when that was hidden too: 2
// events then), or a switch-out (td_switchfrom, td_sleep or td_preempt, and
// td_idle: 2 or 3 events).
struct Losses {
    uint64_t other = 0;
    uint64_t about_threads = 0; // what the reports about one thread say, summed
    std::map<pid_t, long> hidden_in, hidden_out, hidden_ready;
    std::map<pid_t, uint64_t> unplaced; // a report whose thread has no event after it yet

    void place(pid_t tid, bool next_is_switchfrom)
    {
        auto found = unplaced.find(tid);
        if (found == unplaced.end())
            return;
        uint64_t lost = found->second;
        unplaced.erase(found);
        if (next_is_switchfrom) {
            ++hidden_in[tid];
            hidden_ready[tid] += long(lost) - 1;
        } else {
            ++hidden_out[tid];
        }
    }
};

// Every thread event read from a stopped stream, and the losses.
inline std::vector<TdEvent> thread_events(trace_id_t trid, Losses *losses = nullptr)
{
    std::vector<TdEvent> events;
    Losses ignored;
    if (!losses)
        losses = &ignored;
    for (const auto &e : read_available(trid, false)) {
        if (e.info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data overflow;
            std::memcpy(&overflow, e.data.data(), sizeof overflow);
            if (e.info.posix_tid == 0)
                losses->other += overflow.lost;
            else {
                losses->unplaced[e.info.posix_tid] = overflow.lost;
                losses->about_threads += overflow.lost;
            }
        }
        if (!is_thread_event(e.info.posix_event_id))
            continue;
        losses->place(e.info.posix_tid,
                      e.info.posix_event_id == POSIX_TRACE_TD_EVENT_ID(TD_SWITCHFROM));
        REQUIRE(e.data.size() == sizeof(td_event_data));
        TdEvent td{POSIX_TRACE_TD_EVENT_OF(e.info.posix_event_id), {}};
        std::memcpy(&td.data, e.data.data(), sizeof td.data);
        CHECK(td.data.tid == e.info.posix_tid);
        events.push_back(td);
    }
    while (!losses->unplaced.empty()) // nothing after it: by its count alone
        losses->place(losses->unplaced.begin()->first, losses->unplaced.begin()->second == 1);
    return events;
}

// "program=N ..." for the programs whose runs the kernel skipped.
inline std::string skipped_runs(trace_id_t trid)
{
    posix_trace_program_runs runs[32];
    size_t count = 0;
    REQUIRE(posix_trace_get_skipped_runs(trid, runs, 32, &count) == 0);
    std::string text;
    for (size_t i = 0; i < count && i < 32; ++i)
        if (runs[i].skipped)
            text += std::string(runs[i].program) + "=" + std::to_string(runs[i].skipped) + " ";
    return text;
}

inline size_t count(const std::vector<TdEvent> &events, td_event_e event, pid_t tid)
{
    size_t n = 0;
    for (const auto &e : events)
        n += e.event == event && e.data.tid == tid;
    return n;
}

struct SwitchCounts {
    long voluntary = -1;
    long involuntary = -1;
};

inline SwitchCounts switches_of(pid_t pid, pid_t tid)
{
    std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
                         "/status");
    SwitchCounts counts;
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
            counts.voluntary = std::stol(line.substr(line.find(':') + 1));
        if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
            counts.involuntary = std::stol(line.substr(line.find(':') + 1));
    }
    REQUIRE(counts.voluntary >= 0);
    return counts;
}

inline std::vector<std::string> words_of(const std::string &line)
{
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;)
        words.push_back(w);
    return words;
}

// The workload program, its "ready ..." words already read.
struct Workload {
    explicit Workload(std::vector<std::string> args)
        : child([&] {
              args.insert(args.begin(), workload_path());
              return args;
          }())
    {
        ready = words_of(child.read_line());
        REQUIRE(!ready.empty());
        REQUIRE(ready[0] == "ready");
    }
    pid_t ready_tid(size_t i) const { return pid_t(std::stol(ready.at(i + 1))); }
    ChildConversation child;
    std::vector<std::string> ready;
};

// Sets an environment variable for the scope.
struct ScopedEnvironment {
    ScopedEnvironment(const char *name, const char *value) : name(name) { setenv(name, value, 1); }
    ~ScopedEnvironment() { unsetenv(name); }
    const char *name;
};

} // namespace thread_events_support
