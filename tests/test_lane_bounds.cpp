// The lanes' cost grows with the threads that emit: a thousand of them,
// alive at once, take what the documented bound says (a chunk of 64 KiB
// each, besides what the stream allows a burst), and the drain's idle work
// over them stays small.
#include <catch2/catch.hpp>
#include <dirent.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lanes_support.hpp"
#include "test_support.hpp"

using namespace test_support;
using namespace lanes_support;

namespace {

// CPU time of this process's thread named `name`, in ms: the scheduler's
// count in ns (schedstat), not the 10 ms ticks of stat, which sample it.
double thread_cpu_ms(const std::string &name)
{
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks)
        return -1;
    double found = -1;
    while (dirent *entry = readdir(tasks)) {
        std::string base = std::string("/proc/self/task/") + entry->d_name;
        std::ifstream comm(base + "/comm");
        std::string thread_name;
        if (!std::getline(comm, thread_name) || thread_name != name)
            continue;
        std::ifstream schedstat(base + "/schedstat");
        unsigned long long run_ns = 0;
        if (schedstat >> run_ns)
            found = double(run_ns) / 1e6;
    }
    closedir(tasks);
    return found;
}

struct Measured {
    double mapped_mib = -1, resident_mib = -1;
    double drain_cpu_before_ms = -1, drain_cpu_after_ms = -1; // -1: no drain thread found
};

// In this process (a child of the test's): 1,000 threads emit 100 events
// each and wait, alive; the lanes' memory then, and the drain's CPU time
// over one idle second.
Measured measure_thousand_threads()
{
    Measured measured;
    LaneMemory before = lane_memory();
    StreamGuard stream = started_stream();
    trace_event_id_t id = user_event("bounds.event");
    std::mutex mutex;
    std::condition_variable changed;
    int ready = 0;
    bool release = false;
    std::vector<std::thread> threads;
    for (int t = 0; t < 1000; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 100; ++i)
                emit_numbered(id, t, i);
            std::unique_lock lock(mutex);
            ++ready;
            changed.notify_all();
            changed.wait(lock, [&] { return release; });
        });
    {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return ready == 1000; });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // delivered
    LaneMemory after = lane_memory();
    measured.mapped_mib = double(after.mapped - before.mapped) / (1 << 20);
    measured.resident_mib = double(after.resident - before.resident) / (1 << 20);
    measured.drain_cpu_before_ms = thread_cpu_ms("posixtrace-drn");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    measured.drain_cpu_after_ms = thread_cpu_ms("posixtrace-drn");
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    changed.notify_all();
    for (auto &thread : threads)
        thread.join();
    return measured;
}

} // namespace

TEST_CASE("lanes: 1,000 emitting threads take a bounded memory and idle drain time",
          "[lanes][self-tracing]")
{
    if (uprobe_path_forced())
        return; // no lanes
    Measured measured = in_forked_child(measure_thousand_threads);
    REQUIRE(measured.drain_cpu_before_ms >= 0);
    REQUIRE(measured.drain_cpu_after_ms >= measured.drain_cpu_before_ms);
    double idle_drain_cpu_ms = measured.drain_cpu_after_ms - measured.drain_cpu_before_ms;
    WARN("1,000 threads: lanes " << measured.mapped_mib << " MiB mapped, " << measured.resident_mib
                                 << " MiB resident; drain " << idle_drain_cpu_ms
                                 << " ms CPU in an idle second");
    // A chunk of 64 KiB a thread and the first page of its table of chunks,
    // the stream's 8 MiB, and the huge pages the chunks are rounded up to.
    double bound_mib = 1000 * (64.0 + 4.0) / 1024 + 8 + 4;
    CHECK(measured.resident_mib <= bound_mib);
    CHECK(measured.resident_mib <= measured.mapped_mib);
#if !defined(__SANITIZE_ADDRESS__)  // its checks on every access make the figure say nothing
    CHECK(idle_drain_cpu_ms < 100); // under a tenth of a CPU
#endif
}
