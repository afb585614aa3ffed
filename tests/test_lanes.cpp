// The user events of a stream's own process: through the process's lanes by
// default, through the uprobe with POSIXTRACE_USER_EVENTS=kernel (make test
// runs these tests both ways). Either way the stream must get the same events.
#include <posix_trace/events.h>
#include <trace.h>

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lanes_support.hpp"
#include "test_support.hpp"

using namespace test_support;
using namespace lanes_support;

extern "C" unsigned short posix_trace_event_semaphore; // libposixtrace's USDT semaphore

TEST_CASE("lanes: a stream of its own process gets each user event once, with its thread",
          "[lanes][self-tracing]")
{
    StreamGuard stream = started_stream();
    // Through the lanes, nothing raises the probe's semaphore: no trap.
    CHECK((posix_trace_event_semaphore != 0) == uprobe_path_forced());
    trace_event_id_t id = user_event("lanes.hello");
    for (int i = 0; i < 1000; ++i)
        emit_numbered(id, 0, i);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto events = read_available(stream.get());
    auto sequences = sequences_of(events, id);
    std::vector<int> expected(1000);
    for (int i = 0; i < 1000; ++i)
        expected[size_t(i)] = i;
    CHECK(sequences[0] == expected);
    for (const auto &event : events) {
        if (event.info.posix_event_id != id)
            continue;
        CHECK(event.info.posix_pid == getpid());
        CHECK(pthread_equal(event.info.posix_thread_id, pthread_self()));
        CHECK(event.info.posix_prog_address != nullptr);
        CHECK(event.info.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED);
    }
    check_timestamps_ordered(events);
}

// The library finds itself by the kernel's name of its mapping, not by the
// path the dynamic linker found it at (relative with a relative
// LD_LIBRARY_PATH, and wrong once the process changes directory); and it
// reads its own semaphore, not the copy that the link of a program naming it
// makes (which the kernel never raises: no event would be recorded).
TEST_CASE("lanes: a program loaded by a relative library path and naming the semaphore gets "
          "its events",
          "[lanes][self-tracing]")
{
    std::string helper = helper_path("self_tracer");
    std::string build = helper.substr(0, helper.rfind("/tests/helpers/"));
    bool relative = GENERATE(false, true);
    INFO((relative ? "LD_LIBRARY_PATH=lib, from the build directory" : "by its runpath"));
    std::vector<std::string> argv{"/usr/bin/env", "-C", build};
    if (relative)
        argv.push_back("LD_LIBRARY_PATH=lib");
    argv.push_back("tests/helpers/self_tracer");
    ChildConversation child(argv);
    CHECK(child.read_line() ==
          (uprobe_path_forced() ? "semaphore 1 events 3\n" : "semaphore 0 events 3\n"));
}

TEST_CASE("lanes: 1,000 threads each emitting, merged in timestamp order", "[lanes][self-tracing]")
{
    constexpr int kThreads = 1000, kEach = 20;
    StreamGuard stream = started_stream(size_t(64) << 20);
    trace_event_id_t id = user_event("lanes.thread");
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < kThreads)
                std::this_thread::yield();
            for (int i = 0; i < kEach; ++i)
                emit_numbered(id, t, i);
        });
    for (auto &thread : threads)
        thread.join();
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto events = read_available(stream.get());
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.ring_full == 0);
    auto sequences = sequences_of(events, id);
    REQUIRE(sequences.size() == size_t(kThreads));
    std::vector<int> expected(kEach);
    for (int i = 0; i < kEach; ++i)
        expected[size_t(i)] = i;
    for (const auto &[thread, sequence] : sequences) {
        INFO("thread " << thread);
        CHECK(sequence == expected);
    }
    check_timestamps_ordered(events);
}

namespace {
std::atomic<trace_event_id_t> handler_event{0};
std::atomic<int> handled{0};

void emit_in_handler(int)
{
    emit_numbered(handler_event.load(), 1, handled.fetch_add(1));
}
} // namespace

// Every event of the stream, read until none is available.
static std::vector<Event> read_everything(trace_id_t trid)
{
    std::vector<Event> events;
    for (;;) {
        auto some = read_available(trid);
        if (some.empty())
            return events;
        events.insert(events.end(), some.begin(), some.end());
    }
}

// A handler that emits while its thread was emitting: the handler's event is
// recorded whole, and so is the one it interrupted. Each signal is sent once
// the previous one was handled, while the thread emits as fast as it can.
TEST_CASE("lanes: signal handlers emit while their thread emits", "[lanes][self-tracing]")
{
    constexpr int kSignals = 200, kMostEvents = 200000;
    StreamGuard stream = started_stream(size_t(32) << 20);
    trace_event_id_t id = user_event("lanes.main");
    handler_event = user_event("lanes.handler");
    handled = 0;
    struct sigaction action {};
    action.sa_handler = emit_in_handler;
    sigemptyset(&action.sa_mask);
    struct sigaction previous {};
    REQUIRE(sigaction(SIGUSR1, &action, &previous) == 0);
    pthread_t emitter = pthread_self();
    std::atomic<bool> done{false};
    std::thread signaller([&] {
        for (int sent = 0; sent < kSignals && !done.load(); ++sent) {
            pthread_kill(emitter, SIGUSR1);
            while (handled.load() <= sent && !done.load())
                std::this_thread::yield();
        }
    });
    int sent = 0;
    for (; sent < kMostEvents && handled.load() < kSignals; ++sent)
        emit_numbered(id, 0, sent);
    done = true;
    signaller.join();
    sigaction(SIGUSR1, &previous, nullptr);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto events = read_everything(stream.get());
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(stream.get(), &counters) == 0);
    REQUIRE(counters.lost_in_kernel + counters.lost_in_stream == 0);
    CHECK(handled.load() > 0);
    auto main_events = sequences_of(events, id)[0];
    auto handler_events = sequences_of(events, handler_event.load())[1];
    CHECK(main_events.size() == size_t(sent));
    CHECK(handler_events.size() == size_t(handled.load()));
    for (size_t i = 0; i < main_events.size(); ++i)
        REQUIRE(main_events[i] == int(i));
    for (size_t i = 0; i < handler_events.size(); ++i)
        REQUIRE(handler_events[i] == int(i));
    check_timestamps_ordered(events);
}

// Events a thread left when it exited are read; its lane goes to the
// threads that come after it.
TEST_CASE("lanes: threads that exit leave their events and their lane", "[lanes][self-tracing]")
{
    constexpr int kRounds = 20, kThreads = 4;
    StreamGuard stream = started_stream(size_t(16) << 20);
    trace_event_id_t id = user_event("lanes.leaving");
    size_t memory_after_first_round = 0;
    for (int round = 0; round < kRounds; ++round) {
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([=] {
                for (int i = 0; i < 10; ++i)
                    emit_numbered(id, round * kThreads + t, i);
            });
        for (auto &thread : threads)
            thread.join();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        if (round == 0)
            memory_after_first_round = lane_memory().mapped;
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto sequences = sequences_of(read_available(stream.get()), id);
    CHECK(sequences.size() == size_t(kRounds * kThreads));
    for (const auto &[thread, sequence] : sequences)
        CHECK(sequence.size() == 10);
    // The drain gives exited threads' lanes back every 20 ms; rounds are
    // 200 ms apart, so each round's threads take the lanes of the round
    // before, and no lane is mapped after the first round.
    CHECK(lane_memory().mapped == memory_after_first_round);
    if (!uprobe_path_forced()) // the lanes are there to be counted
        CHECK(memory_after_first_round > 0);
}

// The lanes are the parent's: a child of fork that emits (not traced: the
// stream does not follow children) neither crashes nor reaches the stream.
TEST_CASE("lanes: a child of fork emits into nothing", "[lanes][self-tracing]")
{
    StreamGuard stream = started_stream();
    trace_event_id_t id = user_event("lanes.family");
    emit_numbered(id, 0, 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        for (int i = 0; i < 100; ++i)
            emit_numbered(id, 1, i);
        std::thread([id] { emit_numbered(id, 2, 0); }).join();
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    emit_numbered(id, 0, 1);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto sequences = sequences_of(read_available(stream.get()), id);
    CHECK(sequences.size() == 1);
    CHECK(sequences[0] == std::vector<int>{0, 1});
}

// One stream at a time takes the lanes; a second stream of the process
// gets the same events through the uprobe.
TEST_CASE("lanes: two streams of the process each get every event", "[lanes][self-tracing]")
{
    StreamGuard first = started_stream();
    trace_id_t trid = 0;
    REQUIRE(posix_trace_create(getpid(), nullptr, &trid) == 0);
    StreamGuard second(trid);
    filter_thread_events(second.get());
    REQUIRE(posix_trace_start(second.get()) == 0);
    trace_event_id_t id = user_event("lanes.both");
    for (int i = 0; i < 100; ++i)
        emit_numbered(id, 0, i);
    for (StreamGuard *stream : {&first, &second}) {
        REQUIRE(posix_trace_stop(stream->get()) == 0);
        CHECK(sequences_of(read_available(stream->get()), id)[0].size() == 100);
    }
}

namespace {

// A page of known bytes that faults until a SIGSEGV handler makes it
// readable, and forks: the fork comes in the middle of the record of the
// posix_trace_event() call that read it.
void *fork_page = nullptr;
pid_t forked = -1;
bool block_instead = false; // the handler sleeps 200 ms instead of forking

void allow_then_fork(int, siginfo_t *info, void *)
{
    auto *page = static_cast<char *>(fork_page);
    auto *at = static_cast<char *>(info->si_addr);
    if (at < page || at >= page + 4096) { // another fault: die of it
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    if (block_instead) {
        timespec pause{0, 200'000'000};
        nanosleep(&pause, nullptr); // ten times the drain's look at stalled records
    } else {
        forked = fork();
    }
    mprotect(fork_page, 4096, PROT_READ);
}

// posix_trace_event() with data that faults until the handler above (which
// forks, or blocks) makes it readable; the call then finishes. The event
// arrives whole and once: the drain waits for a record whose call a signal
// handler interrupted, for as long as the handler blocks on top of it.
// Returns the events read and the losses. On the uprobe path the kernel
// reads the data: nothing faults.
std::vector<Event> emit_through_handler(bool block, trace_event_id_t id, trace_event_id_t after,
                                        posix_trace_loss_counters &losses)
{
    fork_page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(fork_page != MAP_FAILED);
    std::memset(fork_page, 0x5a, 4096);
    REQUIRE(mprotect(fork_page, 4096, PROT_NONE) == 0);
    struct sigaction handler {
    }, previous{};
    handler.sa_sigaction = allow_then_fork;
    handler.sa_flags = SA_SIGINFO;
    sigemptyset(&handler.sa_mask);
    REQUIRE(sigaction(SIGSEGV, &handler, &previous) == 0);

    StreamGuard stream = started_stream();
    forked = -1;
    block_instead = block;
    const pid_t parent = getpid();
    posix_trace_event(id, fork_page, 64);
    if (getpid() != parent) {
        for (int i = 0; i < 100; ++i) // into nothing: the lanes are the parent's
            emit_numbered(after, 1, i);
        _exit(0);
    }
    sigaction(SIGSEGV, &previous, nullptr);
    emit_numbered(after, 0, 0);
    if (forked > 0) {
        int status = 0;
        REQUIRE(waitpid(forked, &status, 0) == forked);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto events = read_available(stream.get());
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    munmap(fork_page, 4096);
    return events;
}

void check_one_whole_event(const std::vector<Event> &events, trace_event_id_t id,
                           trace_event_id_t after, const posix_trace_loss_counters &losses)
{
    CHECK(count_of(events, id) == 1);
    CHECK(sequences_of(events, after) == std::map<int, std::vector<int>>{{0, {0}}});
    CHECK(losses.ring_full + losses.overwritten + losses.refused + losses.late == 0);
    for (const auto &event : events)
        if (event.info.posix_event_id == id && !uprobe_path_forced())
            CHECK(event.data == std::vector<unsigned char>(64, 0x5a));
}

} // namespace

TEST_CASE("lanes: a signal handler that forks in the middle of a record", "[lanes][self-tracing]")
{
    trace_event_id_t id = user_event("lanes.forked"), after = user_event("lanes.after");
    posix_trace_loss_counters losses{};
    auto events = emit_through_handler(false, id, after, losses);
    if (uprobe_path_forced())
        CHECK(forked == -1);
    else
        CHECK(forked > 0);
    check_one_whole_event(events, id, after, losses);
}

// fork() copies the page tables of the whole process: in a large process
// it runs tens of milliseconds of CPU in the kernel, which the drain must
// not take for a record left busy for good.
TEST_CASE("lanes: a signal handler whose fork takes long keeps its event", "[lanes][self-tracing]")
{
    constexpr size_t kLarge = size_t(2) << 30; // in small pages: about 40 ms of fork here
    void *large = mmap(nullptr, kLarge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(large != MAP_FAILED);
    REQUIRE(madvise(large, kLarge, MADV_NOHUGEPAGE) == 0);
    std::memset(large, 1, kLarge);
    trace_event_id_t id = user_event("lanes.forked_large"), after = user_event("lanes.after");
    posix_trace_loss_counters losses{};
    auto events = emit_through_handler(false, id, after, losses);
    munmap(large, kLarge);
    check_one_whole_event(events, id, after, losses);
}

TEST_CASE("lanes: a signal handler that blocks in the middle of a record keeps its event",
          "[lanes][self-tracing]")
{
    trace_event_id_t id = user_event("lanes.blocked"), after = user_event("lanes.after");
    posix_trace_loss_counters losses{};
    auto events = emit_through_handler(true, id, after, losses);
    check_one_whole_event(events, id, after, losses);
}

// Lanes are never unmapped (an emitter may race with the end of a stream),
// but the chunks a burst took, once read, give their pages back when the
// stream ends: the next stream of the process starts from a thread's chunk.
TEST_CASE("lanes: a stream that ends gives back the memory its burst took", "[lanes][self-tracing]")
{
    constexpr int kEvents = 160'000; // 19.2 MB of records of 64 bytes, held in the lanes
    size_t resident_during = 0;
    {
        StreamGuard big = started_stream(size_t(64) << 20);
        trace_event_id_t id = user_event("lanes.big");
        {
            DrainStarved starved;
            char data[64] = {};
            for (int i = 0; i < kEvents; ++i)
                posix_trace_event(id, data, sizeof data);
        }
        REQUIRE(posix_trace_stop(big.get()) == 0); // read into the stream
        resident_during = lane_memory().resident;
    }
    size_t resident_after = lane_memory().resident;
    INFO("lanes and stream resident during " << resident_during << " after " << resident_after);
    if (!uprobe_path_forced()) // the lanes', and the stream's copy
        CHECK(resident_after + 2 * 15'000'000 <= resident_during);
}
