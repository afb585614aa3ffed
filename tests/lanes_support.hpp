// What the tests of the lanes share: numbered events, the lanes' memory,
// and calls that fault and leave through siglongjmp.
#pragma once
#include <alloca.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "test_support.hpp"

namespace lanes_support {
using namespace test_support;

inline bool uprobe_path_forced()
{
    const char *path = getenv("POSIXTRACE_USER_EVENTS");
    return path && std::string(path) == "kernel";
}

struct Numbered {
    int thread;
    int sequence;
};

inline void emit_numbered(trace_event_id_t id, int thread, int sequence)
{
    Numbered data{thread, sequence};
    posix_trace_event(id, &data, sizeof data);
}

// 0, 1, ... count - 1: a thread's sequence when nothing was lost.
inline std::vector<int> sequence_up_to(int count)
{
    std::vector<int> sequence(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
        sequence[size_t(i)] = i;
    return sequence;
}

// Events of `id`, each thread's sequence numbers in the order read.
inline std::map<int, std::vector<int>> sequences_of(const std::vector<Event> &events,
                                                    trace_event_id_t id)
{
    std::map<int, std::vector<int>> sequences;
    for (const auto &event : events) {
        if (event.info.posix_event_id != id || event.data.size() != sizeof(Numbered))
            continue;
        Numbered data;
        std::memcpy(&data, event.data.data(), sizeof data);
        sequences[data.thread].push_back(data.sequence);
    }
    return sequences;
}

inline void check_timestamps_ordered(const std::vector<Event> &events)
{
    for (size_t i = 1; i < events.size(); ++i)
        REQUIRE(timespec_le(events[i - 1].info.posix_timestamp, events[i].info.posix_timestamp));
}

// The memory that a child of fork gets zeroed ("wf" in smaps): the lanes'
// rings, and the page that controls them. Mapped, and resident.
struct LaneMemory {
    size_t mapped = 0, resident = 0;
};

inline LaneMemory lane_memory()
{
    std::ifstream smaps("/proc/self/smaps");
    LaneMemory total;
    size_t mapped = 0, resident_kb = 0;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long start = 0, end = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2) // a mapping's first line
            mapped = end - start;
        else if (line.rfind("Rss:", 0) == 0)
            resident_kb = std::stoul(line.substr(4));
        else if (line.rfind("VmFlags:", 0) == 0 && (line + " ").find(" wf ") != std::string::npos) {
            total.mapped += mapped;
            total.resident += resident_kb * 1024;
        }
    }
    return total;
}

// The tid of this process's thread named `name` (the newest, if several);
// 0 if none.
inline pid_t thread_named(const std::string &name)
{
    DIR *tasks = opendir("/proc/self/task");
    pid_t found = 0;
    while (dirent *entry = tasks ? readdir(tasks) : nullptr) {
        std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
        std::string thread_name;
        if (std::getline(comm, thread_name) && thread_name == name)
            found = std::max<pid_t>(found, pid_t(std::atoi(entry->d_name)));
    }
    if (tasks)
        closedir(tasks);
    return found;
}

// While it lives, the stream's drain thread runs only on CPU 0, where the
// traced child, real-time (SCHED_FIFO), keeps it from running during a burst.
class DrainBehindChild {
public:
    explicit DrainBehindChild(pid_t child) : drain_(thread_named("posixtrace-drn"))
    {
        REQUIRE(drain_ > 0);
        REQUIRE(sched_getaffinity(drain_, sizeof drain_cpus_, &drain_cpus_) == 0);
        cpu_set_t cpu0;
        CPU_ZERO(&cpu0);
        CPU_SET(0, &cpu0);
        REQUIRE(sched_setaffinity(drain_, sizeof cpu0, &cpu0) == 0);
        sched_param fifo{1};
        REQUIRE(sched_setscheduler(child, SCHED_FIFO, &fifo) == 0);
    }
    ~DrainBehindChild() { sched_setaffinity(drain_, sizeof drain_cpus_, &drain_cpus_); }
    DrainBehindChild(const DrainBehindChild &) = delete;
    DrainBehindChild &operator=(const DrainBehindChild &) = delete;

private:
    pid_t drain_;
    cpu_set_t drain_cpus_{};
};

// While it lives, the calling thread keeps the stream's drain thread from
// running: both on one CPU, the caller real-time (SCHED_FIFO), so the drain
// runs only once the caller blocks or this ends. What the caller emits
// meanwhile waits in the lanes (or the kernel's ring), as when emitting
// threads take every CPU.
class DrainStarved {
public:
    DrainStarved()
    {
        drain_ = thread_named("posixtrace-drn");
        REQUIRE(drain_ > 0);
        REQUIRE(sched_getaffinity(0, sizeof caller_cpus_, &caller_cpus_) == 0);
        REQUIRE(sched_getaffinity(drain_, sizeof drain_cpus_, &drain_cpus_) == 0);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        sched_param real_time{1};
        bool held = sched_setaffinity(drain_, sizeof one, &one) == 0 &&
                    sched_setaffinity(0, sizeof one, &one) == 0 &&
                    pthread_setschedparam(pthread_self(), SCHED_FIFO, &real_time) == 0;
        if (!held) // the tests after this one run as before
            let_go();
        REQUIRE(held);
    }
    ~DrainStarved() { let_go(); }
    DrainStarved(const DrainStarved &) = delete;
    DrainStarved &operator=(const DrainStarved &) = delete;

private:
    void let_go()
    {
        sched_param normal{0};
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
        sched_setaffinity(0, sizeof caller_cpus_, &caller_cpus_);
        sched_setaffinity(drain_, sizeof drain_cpus_, &drain_cpus_);
    }

    pid_t drain_ = 0;
    cpu_set_t caller_cpus_{}, drain_cpus_{};
};

// What `work` returns, run in a child of fork: a process whose lanes are
// its own (the test process's are wiped there). `Result` is plain bytes.
// A REQUIRE that fails in the child fails the test here.
template <class Result> Result in_forked_child(Result (*work)())
{
    int results[2];
    REQUIRE(pipe(results) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(results[0]);
        try { // a failed REQUIRE here must not run the parent's tests on
            Result result = work();
            [[maybe_unused]] ssize_t n = write(results[1], &result, sizeof result);
        } catch (...) {
            _exit(1);
        }
        _exit(0);
    }
    close(results[1]);
    Result result{};
    ssize_t got = read(results[0], &result, sizeof result);
    close(results[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    REQUIRE(got == ssize_t(sizeof result));
    return result;
}

inline StreamGuard started_stream(size_t stream_size = 0)
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    if (stream_size)
        REQUIRE(posix_trace_attr_setstreamsize(&attr, stream_size) == 0);
    StreamGuard stream = make_stream(&attr);
    posix_trace_attr_destroy(&attr);
    filter_thread_events(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    return stream;
}

// posix_trace_event() called with data the process cannot read faults on
// the lanes (a bad pointer faults in any C function), in the middle of its
// record; the handler leaves through siglongjmp, as a program that probes
// memory does. On the uprobe path the kernel reads the data, and records
// the event with its fault flag instead.
inline sigjmp_buf fault_return;

inline void leave_through_siglongjmp(int)
{
    siglongjmp(fault_return, 1);
}

class FaultsLeaveThroughSiglongjmp {
public:
    FaultsLeaveThroughSiglongjmp()
    {
        struct sigaction leave {};
        leave.sa_handler = leave_through_siglongjmp;
        sigemptyset(&leave.sa_mask);
        REQUIRE(sigaction(SIGSEGV, &leave, &old_segv_) == 0);
        REQUIRE(sigaction(SIGBUS, &leave, &old_bus_) == 0);
        unreadable_ = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(unreadable_ != MAP_FAILED);
    }
    ~FaultsLeaveThroughSiglongjmp()
    {
        sigaction(SIGSEGV, &old_segv_, nullptr);
        sigaction(SIGBUS, &old_bus_, nullptr);
        munmap(unreadable_, 4096);
    }
    // Emits `id` with 64 bytes the process cannot read; true if the call
    // was left through siglongjmp.
    bool emit_unreadable(trace_event_id_t id)
    {
        if (sigsetjmp(fault_return, 1) != 0)
            return true;
        posix_trace_event(id, unreadable_, 64);
        return false;
    }

private:
    struct sigaction old_segv_ {};
    struct sigaction old_bus_ {};
    void *unreadable_ = nullptr;
};

inline size_t count_of(const std::vector<Event> &events, trace_event_id_t id)
{
    size_t count = 0;
    for (const auto &event : events)
        count += event.info.posix_event_id == id;
    return count;
}

// Emits `id` with unreadable data from a frame 64 KiB below the caller's:
// after siglongjmp, the thread's next calls run above that frame and leave
// the faulted call's token intact, so they take the next nesting level while
// its record stays busy, until the drain gives it up.
__attribute__((noinline)) inline bool emit_unreadable_deep(FaultsLeaveThroughSiglongjmp &faults,
                                                           trace_event_id_t id)
{
    volatile char *below = static_cast<char *>(alloca(64 * 1024));
    below[0] = 0;
    return faults.emit_unreadable(id);
}

} // namespace lanes_support
