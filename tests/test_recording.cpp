// Recording: what posix_trace_event() puts into a stream and how the stream
// hands it back -- the event information, truncation (at recording and at
// reading), ordering across CPUs and threads (the full policies and the
// loss accounting: test_recording_policies.cpp). Every test traces this
// process into a stream of its own.
#include "recording_support.hpp"

#include <linux/futex.h>
#include <posix_trace/events.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <trace.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace recording_support;

namespace {

uint64_t nanos(const timespec &t)
{
    return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

// The first two CPUs this process may run on.
std::vector<int> usable_cpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set))
            cpus.push_back(cpu);
    return cpus;
}

// Waits while `word` holds `seen`, a millisecond at most: a wake-up lost
// between the two players costs a millisecond, never the test. With
// std::atomic::wait (libstdc++ 12) a player once slept here for good on a
// turn already passed, the other waiting for it: most likely the notify
// skipped its futex wake, as libstdc++ counts waiters apart from the futex.
void wait_briefly_while(std::atomic<uint32_t> &word, uint32_t seen)
{
    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
    timespec most{0, 1'000'000};
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, seen, &most,
            nullptr, 0);
}

void wake_all_waiting_on(std::atomic<uint32_t> &word)
{
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
            nullptr, 0);
}

bool pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 && sched_getcpu() == cpu;
}

// The instrumentation point of the event-information test. noinline, and the
// barrier after the call keeps it from being a tail call, so the caller of
// posix_trace_event() is this function.
__attribute__((noinline)) void emit_from_here(trace_event_id_t id, const void *data, size_t len)
{
    posix_trace_event(id, data, len);
    asm volatile("" ::: "memory");
}

} // namespace

TEST_CASE("recording: event information of an event emitted by a helper thread",
          "[recording][self-tracing]")
{
    Attr attr;
    trace_event_id_t id = user_event("rec.info");
    StreamGuard stream = started_stream(attr);

    unsigned char payload[24];
    for (size_t i = 0; i < sizeof payload; ++i)
        payload[i] = (unsigned char)(0xA0 + i);

    pid_t helper_tid = 0;
    pthread_t helper_self{};
    uint64_t before_ns = 0, after_ns = 0;
    std::thread helper([&] {
        helper_tid = gettid();
        helper_self = pthread_self();
        before_ns = nanos(stream_clock_now(stream.get()));
        emit_from_here(id, payload, sizeof payload);
        after_ns = nanos(stream_clock_now(stream.get()));
        emit_from_here(id, nullptr, 0);
    });
    helper.join();
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::vector<Event> events = read_everything(stream.get());
    std::vector<Event> user;
    for (auto &e : events)
        if (e.info.posix_event_id == id)
            user.push_back(e);
    REQUIRE(user.size() == 2);

    const Event &e = user[0];
    CHECK(e.info.posix_event_id == id);
    CHECK(e.info.posix_pid == getpid());
    CHECK(e.info.posix_tid == helper_tid);
    CHECK(helper_tid != gettid());
    CHECK(pthread_equal(e.info.posix_thread_id, helper_self) != 0);
    auto function = reinterpret_cast<uintptr_t>(&emit_from_here);
    auto address = reinterpret_cast<uintptr_t>(e.info.posix_prog_address);
    INFO("emit_from_here at " << std::hex << function << ", posix_prog_address " << address);
    CHECK(address > function);
    CHECK(address < function + 512);
    uint64_t ts = nanos(e.info.posix_timestamp);
    INFO("timestamp " << ts << ", window [" << before_ns << ", " << after_ns << "]");
    CHECK(ts + 200000 >= before_ns);
    CHECK(ts <= after_ns + 200000);
    CHECK(e.info.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED);
    REQUIRE(e.data.size() == sizeof payload);
    CHECK(std::memcmp(e.data.data(), payload, sizeof payload) == 0);

    const Event &empty = user[1];
    CHECK(empty.data.empty());
    CHECK(empty.info.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED);
    CHECK(empty.info.posix_tid == helper_tid);
    CHECK(empty.info.posix_pid == getpid());
    CHECK(pthread_equal(empty.info.posix_thread_id, helper_self) != 0);
    CHECK(nanos(empty.info.posix_timestamp) >= ts);
}

TEST_CASE("recording: data longer than max-data-size is truncated when recorded",
          "[recording][self-tracing]")
{
    Attr attr;
    REQUIRE(posix_trace_attr_setmaxdatasize(attr.get(), 16) == 0);
    trace_event_id_t id = user_event("rec.trunc_record");
    StreamGuard stream = started_stream(attr);

    unsigned char long_data[40], exact_data[16];
    for (size_t i = 0; i < sizeof long_data; ++i)
        long_data[i] = (unsigned char)(i + 1);
    for (size_t i = 0; i < sizeof exact_data; ++i)
        exact_data[i] = (unsigned char)(0x80 + i);
    posix_trace_event(id, long_data, sizeof long_data);
    posix_trace_event(id, exact_data, sizeof exact_data);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::vector<Event> user;
    for (auto &e : read_everything(stream.get()))
        if (e.info.posix_event_id == id)
            user.push_back(e);
    REQUIRE(user.size() == 2);

    CHECK(user[0].info.posix_truncation_status == POSIX_TRACE_TRUNCATED_RECORD);
    REQUIRE(user[0].data.size() == 16);
    CHECK(std::memcmp(user[0].data.data(), long_data, 16) == 0);

    CHECK(user[1].info.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED);
    REQUIRE(user[1].data.size() == 16);
    CHECK(std::memcmp(user[1].data.data(), exact_data, 16) == 0);
}

TEST_CASE("recording: a buffer smaller than the data truncates at reading",
          "[recording][self-tracing]")
{
    Attr attr;
    trace_event_id_t id = user_event("rec.trunc_read");
    StreamGuard stream = started_stream(attr);

    unsigned char first[32], second[32];
    for (size_t i = 0; i < sizeof first; ++i) {
        first[i] = (unsigned char)(0x10 + i);
        second[i] = (unsigned char)(0x60 + i);
    }
    posix_trace_event(id, first, sizeof first);
    posix_trace_event(id, second, sizeof second);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    Got start = try_next(stream.get());
    REQUIRE(start.err == 0);
    REQUIRE(start.unavailable == 0);
    CHECK(start.info.posix_event_id == POSIX_TRACE_START);

    Got small = try_next(stream.get(), 8);
    REQUIRE(small.err == 0);
    REQUIRE(small.unavailable == 0);
    CHECK(small.info.posix_event_id == id);
    CHECK(small.data_len == 8);
    CHECK(small.info.posix_truncation_status == POSIX_TRACE_TRUNCATED_READ);
    CHECK(std::memcmp(small.data.data(), first, 8) == 0);

    // The truncated event was consumed: the next read is the next event.
    Got next = try_next(stream.get());
    REQUIRE(next.err == 0);
    REQUIRE(next.unavailable == 0);
    CHECK(next.info.posix_event_id == id);
    REQUIRE(next.data_len == sizeof second);
    CHECK(std::memcmp(next.data.data(), second, sizeof second) == 0);
    CHECK(next.info.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED);

    Got stop = try_next(stream.get());
    REQUIRE(stop.err == 0);
    REQUIRE(stop.unavailable == 0);
    CHECK(stop.info.posix_event_id == POSIX_TRACE_STOP);
    Got none = try_next(stream.get());
    CHECK(none.err == 0);
    CHECK(none.unavailable != 0);
}

TEST_CASE("recording: events ping-ponged between two CPUs read back in emission order",
          "[recording][self-tracing]")
{
    std::vector<int> cpus = usable_cpus();
    REQUIRE(cpus.size() >= 2);

    Attr attr;
    trace_event_id_t id = user_event("rec.pingpong");
    StreamGuard stream = started_stream(attr);

    constexpr uint32_t kTurns = 10000; // 5,000 per thread
    std::atomic<uint32_t> turn{0};
    std::atomic<int> pinned_ok{0}, pin_failed{0}, arrived{0};
    auto player = [&](int cpu, uint32_t parity) {
        if (pin_to(cpu))
            pinned_ok++;
        else
            pin_failed++;
        arrived++;
        while (arrived.load() < 2) {
        }
        if (pin_failed.load() != 0)
            return;
        for (uint32_t n = parity; n < kTurns; n += 2) {
            // Spin for our turn; fall back to a futex wait if the other
            // thread is off its CPU for long (a loaded machine).
            for (int spins = 0;; ++spins) {
                uint32_t now = turn.load(std::memory_order_acquire);
                if (now == n)
                    break;
                if (spins > 20000)
                    wait_briefly_while(turn, now);
            }
            posix_trace_event(id, &n, sizeof n);
            turn.store(n + 1, std::memory_order_release);
            wake_all_waiting_on(turn);
        }
    };
    std::thread a(player, cpus[0], 0u), b(player, cpus[1], 1u);
    a.join();
    b.join();
    REQUIRE(pin_failed.load() == 0);
    REQUIRE(pinned_ok.load() == 2);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::vector<Event> events = read_everything(stream.get());
    std::vector<uint32_t> order;
    size_t out_of_order = 0, overflows = 0;
    uint64_t previous_ts = 0;
    for (auto &e : events) {
        uint64_t ts = nanos(e.info.posix_timestamp);
        if (ts < previous_ts)
            ++out_of_order;
        previous_ts = ts;
        if (e.info.posix_event_id == POSIX_TRACE_OVERFLOW)
            ++overflows;
        if (e.info.posix_event_id == id)
            order.push_back(payload_as<uint32_t>(e.data));
    }
    CHECK(overflows == 0);
    CHECK(out_of_order == 0);
    REQUIRE(order.size() == kTurns);
    size_t first_wrong = kTurns;
    for (uint32_t i = 0; i < kTurns; ++i)
        if (order[i] != i) {
            first_wrong = i;
            break;
        }
    INFO("first event out of emission order at index "
         << first_wrong
         << (first_wrong < kTurns ? " (got " + std::to_string(order[first_wrong]) + ")" : ""));
    CHECK(first_wrong == kTurns);
}

TEST_CASE("recording: events of several threads keep per-thread order and global time order",
          "[recording][self-tracing]")
{
    Attr attr;
    trace_event_id_t id = user_event("rec.threads");
    StreamGuard stream = started_stream(attr);

    constexpr int kThreads = 4;
    constexpr uint32_t kPerThread = 1000;
    struct Payload {
        uint32_t thread;
        uint32_t seq;
    };
    std::atomic<bool> go{false};
    pid_t tids[kThreads] = {};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            tids[t] = gettid();
            while (!go.load(std::memory_order_acquire)) {
            }
            for (uint32_t seq = 0; seq < kPerThread; ++seq) {
                Payload p{uint32_t(t), seq};
                posix_trace_event(id, &p, sizeof p);
            }
        });
    go.store(true, std::memory_order_release);
    for (auto &t : threads)
        t.join();
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::vector<Event> events = read_everything(stream.get());
    uint32_t next_seq[kThreads] = {};
    size_t user = 0, out_of_order = 0, wrong_thread = 0, time_backwards = 0, overflows = 0;
    uint64_t previous = 0;
    std::string first_backwards;
    trace_event_id_t previous_id = 0;
    pid_t previous_tid = 0;
    for (size_t i = 0; i < events.size(); ++i) {
        const Event &e = events[i];
        uint64_t ts = nanos(e.info.posix_timestamp);
        if (ts < previous && time_backwards++ == 0)
            first_backwards =
                "event " + std::to_string(i) + " (id " + std::to_string(e.info.posix_event_id) +
                ", tid " + std::to_string(e.info.posix_tid) + ") is " +
                std::to_string(previous - ts) + " ns older than the one before (id " +
                std::to_string(previous_id) + ", tid " + std::to_string(previous_tid) + ")";
        previous = ts;
        previous_id = e.info.posix_event_id;
        previous_tid = e.info.posix_tid;
        if (e.info.posix_event_id == POSIX_TRACE_OVERFLOW)
            ++overflows;
        if (e.info.posix_event_id != id)
            continue;
        ++user;
        REQUIRE(e.data.size() == sizeof(Payload));
        Payload p = payload_as<Payload>(e.data);
        REQUIRE(p.thread < uint32_t(kThreads));
        if (e.info.posix_tid != tids[p.thread])
            ++wrong_thread;
        if (p.seq != next_seq[p.thread])
            ++out_of_order;
        next_seq[p.thread] = p.seq + 1;
    }
    CHECK(overflows == 0);
    CHECK(user == size_t(kThreads) * kPerThread);
    CHECK(out_of_order == 0);
    CHECK(wrong_thread == 0);
    INFO("first step back in time: " << first_backwards);
    CHECK(time_backwards == 0);
    for (int t = 0; t < kThreads; ++t)
        CHECK(next_seq[t] == kPerThread);
    CHECK(events.front().info.posix_event_id == POSIX_TRACE_START);
    CHECK(events.back().info.posix_event_id == POSIX_TRACE_STOP);
}

// The kernel side: a ring that fills up while its reader cannot run. The drain
// thread is pinned to the emitter's CPU and the emitter runs SCHED_FIFO, so
// the drain thread does not run until the burst is over: the ring overflows,
// the BPF program counts every failed reservation, and the losses come back
// as overflow events whose counts, with the events read, add up exactly.
