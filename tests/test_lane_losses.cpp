// Lane records a thread never finishes (its call left through siglongjmp):
// each is counted lost exactly once, reported before the events its thread
// made after it, and never holds the stream back.
#include <posix_trace/events.h>
#include <trace.h>

#include <alloca.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "lanes_support.hpp"

using namespace test_support;
using namespace lanes_support;

TEST_CASE("lanes: a call left through siglongjmp loses its own event, counted, and nothing else",
          "[lanes][self-tracing]")
{
    FaultsLeaveThroughSiglongjmp faults;
    StreamGuard stream = started_stream();
    trace_event_id_t good = user_event("lanes.good"), bad = user_event("lanes.bad");
    size_t left = 0;
    for (int i = 0; i < 10; ++i) {
        left += faults.emit_unreadable(bad);
        emit_numbered(good, 0, i);
    }
    // Then many events: a level left in use for good would leave this
    // thread without a lane after a few (each counted lost).
    for (int i = 10; i < 1000; ++i)
        emit_numbered(good, 0, i);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto events = read_available(stream.get());
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);

    CHECK(sequences_of(events, good)[0] == sequence_up_to(1000));
    check_timestamps_ordered(events);
    if (uprobe_path_forced()) { // the kernel copies nothing, and says so
        CHECK(left == 0);
        CHECK(count_of(events, bad) == 10);
        CHECK(losses.ring_full == 0);
    } else {
        CHECK(left == 10);
        CHECK(count_of(events, bad) == 0);
        CHECK(losses.ring_full == 10); // each record the fault left unfinished, no more
    }
}

TEST_CASE("lanes: a thread that left a record unfinished does not hold the stream",
          "[lanes][self-tracing]")
{
    FaultsLeaveThroughSiglongjmp faults;
    StreamGuard stream = started_stream();
    trace_event_id_t good = user_event("lanes.good"), bad = user_event("lanes.bad");
    int release[2];
    REQUIRE(pipe(release) == 0);
    std::atomic<int> left{-1};
    std::atomic<bool> done{false};
    std::thread stalled;
    // Whatever fails below, the other thread is let go and joined: a
    // joinable std::thread destroyed would abort every later test.
    struct Release {
        std::atomic<bool> &done;
        int *release;
        std::thread &stalled;
        ~Release()
        {
            done = true;
            (void)!write(release[1], "x", 1);
            if (stalled.joinable())
                stalled.join();
            close(release[0]);
            close(release[1]);
        }
    } release_at_end{done, release, stalled};
    // The drain gives the record up once the thread blocks in a system call,
    // or once it has run 10 ms of CPU time, without emitting again.
    SECTION("the thread then blocks in a system call")
    {
        stalled = std::thread([&] {
            // From deep in its stack: read() then blocks above the faulted
            // call's frame (below it, with the call's token intact, it
            // would look like a handler running on top of the call).
            left = emit_unreadable_deep(faults, bad);
            char byte;
            (void)!read(release[0], &byte, 1);
        });
    }
    SECTION("the thread then runs without a system call")
    {
        stalled = std::thread([&] {
            left = faults.emit_unreadable(bad);
            while (!done.load(std::memory_order_relaxed)) {
            }
        });
    }
    auto started = std::chrono::steady_clock::now();
    while (left < 0 && std::chrono::steady_clock::now() - started < std::chrono::seconds(10))
        std::this_thread::yield();
    REQUIRE(left >= 0);
    for (int i = 0; i < 100; ++i)
        emit_numbered(good, 0, i);

    // Every event of the main thread comes, while the other thread lives on.
    size_t delivered = 0;
    while (delivered < 100) {
        timespec deadline = realtime_in(10'000'000'000LL);
        ReadResult next = get_next(stream.get(), GetNext::Timed, &deadline);
        REQUIRE(next.err == 0);
        delivered += next.info.posix_event_id == good;
    }
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.ring_full == (uprobe_path_forced() ? 0u : 1u));
    CHECK(left == (uprobe_path_forced() ? 0 : 1));
}

// The child writes its copy of the interrupted record into zeroed pages of
// its own, neither faulting nor reaching the stream.

namespace {

uint64_t thread_cpu_ns()
{
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return uint64_t(now.tv_sec) * 1'000'000'000 + uint64_t(now.tv_nsec);
}

// Runs for `ns` of this thread's CPU time, however long others hold the CPU.
void spin_on_cpu_for(uint64_t ns)
{
    for (uint64_t end = thread_cpu_ns() + ns; thread_cpu_ns() < end;) {
    }
}

} // namespace

TEST_CASE("lanes: a record given up is reported before the events its thread made after it",
          "[lanes][self-tracing]")
{
    FaultsLeaveThroughSiglongjmp faults;
    StreamGuard stream = started_stream();
    trace_event_id_t good = user_event("lanes.good"), bad = user_event("lanes.bad");
    bool left = emit_unreadable_deep(faults, bad);
    // 60 ms of CPU without a system call: the drain gives the record up.
    for (int i = 0; i < 60; ++i) {
        emit_numbered(good, 0, i);
        spin_on_cpu_for(1'000'000);
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto events = read_available(stream.get());
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);

    CHECK(sequences_of(events, good)[0] == sequence_up_to(60));
    check_timestamps_ordered(events);
    if (uprobe_path_forced()) { // the kernel copies nothing, and says so
        CHECK_FALSE(left);
        CHECK(losses.ring_full == 0);
        return;
    }
    REQUIRE(left);
    CHECK(losses.ring_full == 1);
    size_t first_good = events.size(), first_loss = events.size();
    for (size_t i = 0; i < events.size(); ++i) {
        trace_event_id_t id = events[i].info.posix_event_id;
        if (id == good && first_good == events.size())
            first_good = i;
        if (id == POSIX_TRACE_OVERFLOW && first_loss == events.size())
            first_loss = i;
    }
    INFO("first event after the fault at " << first_good << ", the loss report at " << first_loss
                                           << " of " << events.size());
    REQUIRE(first_loss < events.size());
    CHECK(first_loss < first_good);
}
