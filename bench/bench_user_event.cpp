// Benchmarks of the user event path. Modes:
//   untraced N            posix_trace_event() with no stream (semaphore off)
//   stream N              a running stream on this process, a reader draining it
//   external N            waits for SIGUSR1 (an outside tracer attached), then emits
//   sustained N           2 emitting threads and a reader: delivery rate and losses
//   paced RATE N          the same, the 2 threads together emitting RATE events/s
//                         (N each; the ns per event then include the sleeps)
//   wake N                a reader blocked in getnext, N events one at a time:
//                         from posix_trace_event() to getnext's return, next to
//                         the same two threads woken through an eventfd
// Every mode emits N events of 64 bytes and prints one line of key=value.
#include <posix_trace/events.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPayload = 64;

double emit_ns_per_event(trace_event_id_t id, long count)
{
    return emit_payload64(id, count);
}

struct ReadTotals {
    uint64_t user = 0;
    uint64_t lost = 0;
};

// Reads until `stop` is set and nothing is left.
void read_stream(trace_id_t trid, trace_event_id_t user_id, std::atomic<bool> &stop,
                 ReadTotals &totals)
{
    unsigned char data[256];
    for (;;) {
        posix_trace_event_info info;
        size_t len;
        int unavailable;
        timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 20'000'000;
        if (deadline.tv_nsec >= 1'000'000'000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1'000'000'000;
        }
        int err = posix_trace_timedgetnext_event(trid, &info, data, sizeof data, &len, &unavailable,
                                                 &deadline);
        if (err == ETIMEDOUT) {
            if (stop.load())
                return;
            continue;
        }
        if (err)
            return;
        if (info.posix_event_id == user_id)
            totals.user++;
        else if (info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data overflow;
            std::memcpy(&overflow, data, sizeof overflow);
            totals.lost += overflow.lost;
        }
    }
}

// Emits `count` events at `per_second`: bursts of 1,024, sleeping between
// them when ahead (a spinning emitter would starve the reader of CPU).
double emit_paced(trace_event_id_t id, long count, double per_second)
{
    unsigned char payload[kPayload];
    std::memset(payload, 0xab, sizeof payload);
    auto begin = Clock::now();
    for (long i = 0; i < count; ++i) {
        if (i % 1024 == 0)
            std::this_thread::sleep_until(
                begin + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(double(i) / per_second)));
        std::memcpy(payload, &i, sizeof i);
        posix_trace_event(id, payload, sizeof payload);
    }
    std::chrono::duration<double, std::nano> elapsed = Clock::now() - begin;
    return elapsed.count() / double(count);
}

// `per_second`: the emitters' total rate; 0 for as fast as they can.
int run_stream(trace_event_id_t id, long count, int emitters, double per_second = 0)
{
    trace_id_t trid;
    if (int err = posix_trace_create(0, nullptr, &trid)) {
        std::fprintf(stderr, "posix_trace_create: %s\n", std::strerror(err));
        return 1;
    }
    filter_out_thread_events(trid); // the losses counted are the user events'
    posix_trace_start(trid);
    std::atomic<bool> stop{false};
    ReadTotals totals;
    std::thread reader(read_stream, trid, id, std::ref(stop), std::ref(totals));

    std::vector<double> cost(emitters);
    auto begin = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < emitters; ++t)
        threads.emplace_back([&, t] {
            cost[t] = per_second > 0 ? emit_paced(id, count, per_second / emitters)
                                     : emit_ns_per_event(id, count);
        });
    for (auto &thread : threads)
        thread.join();
    double emit_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    posix_trace_stop(trid);
    stop = true;
    reader.join();
    double total_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    posix_trace_shutdown(trid);

    double mean_cost = 0;
    for (double c : cost)
        mean_cost += c / emitters;
    uint64_t emitted = uint64_t(count) * emitters;
    std::printf(
        "ns_per_event=%.1f emitted=%lu read=%lu lost=%lu emit_rate=%.0f delivered_rate=%.0f\n",
        mean_cost, (unsigned long)emitted, (unsigned long)totals.user, (unsigned long)totals.lost,
        double(emitted) / emit_seconds, double(totals.user) / total_seconds);
    return totals.user + totals.lost == emitted ? 0 : 2;
}

// One wake-up at a time: the reader, blocked, stamps its return and lets the
// caller go on; the caller pauses so that the reader blocks again.
class WakeTimer {
public:
    template <class Wake, class Read> std::vector<double> time(long count, Wake wake, Read read)
    {
        std::vector<double> micros;
        std::thread reader([&] {
            for (long i = 0; i < count; ++i) {
                read();
                returned_ = Clock::now();
                answered_.release();
            }
        });
        for (long i = 0; i < count; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            auto woken = Clock::now();
            wake();
            answered_.acquire();
            micros.push_back(std::chrono::duration<double, std::micro>(returned_ - woken).count());
        }
        reader.join();
        std::sort(micros.begin(), micros.end());
        return micros;
    }

private:
    std::binary_semaphore answered_{0};
    Clock::time_point returned_;
};

std::string percentiles(const char *name, const std::vector<double> &sorted)
{
    char line[160];
    std::snprintf(line, sizeof line, "%s_median_us=%.1f %s_p99_us=%.1f", name,
                  sorted[sorted.size() / 2], name, sorted[sorted.size() * 99 / 100]);
    return line;
}

int run_wake(trace_event_id_t id, long count)
{
    trace_id_t trid;
    if (posix_trace_create(0, nullptr, &trid))
        return 1;
    filter_out_thread_events(trid);
    posix_trace_start(trid);
    unsigned char payload[kPayload] = {};
    auto read_user_event = [&] {
        posix_trace_event_info info{};
        unsigned char data[256];
        size_t len;
        int unavailable;
        do
            if (posix_trace_getnext_event(trid, &info, data, sizeof data, &len, &unavailable))
                std::abort();
        while (info.posix_event_id != id);
    };
    std::vector<double> getnext = WakeTimer().time(
        count, [&] { posix_trace_event(id, payload, sizeof payload); }, read_user_event);
    posix_trace_shutdown(trid);
    int fd = eventfd(0, EFD_CLOEXEC);
    uint64_t one = 1, got;
    std::vector<double> handoff = WakeTimer().time(
        count, [&] { (void)!write(fd, &one, sizeof one); },
        [&] { (void)!read(fd, &got, sizeof got); });
    close(fd);
    std::printf("%s %s\n", percentiles("getnext", getnext).c_str(),
                percentiles("eventfd", handoff).c_str());
    return 0;
}

volatile sig_atomic_t go = 0;

} // namespace

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr,
                     "usage: %s untraced|stream|external|sustained|wake COUNT | paced RATE COUNT\n",
                     argv[0]);
        return 1;
    }
    std::string mode = argv[1];
    long count = std::atol(argv[2]);
    trace_event_id_t id;
    posix_trace_eventid_open("bench:payload64", &id);

    if (mode == "untraced") {
        std::printf("ns_per_event=%.2f\n", emit_ns_per_event(id, count));
        return 0;
    }
    if (mode == "external") {
        signal(SIGUSR1, [](int) { go = 1; });
        std::printf("ready pid=%d\n", getpid());
        std::fflush(stdout);
        while (!go)
            pause();
        std::printf("ns_per_event=%.1f\n", emit_ns_per_event(id, count));
        return 0;
    }
    if (mode == "stream")
        return run_stream(id, count, 1);
    if (mode == "stream-filtered" || mode == "stream-unread" || mode == "stream-suspended") {
        // Breakdown: the probe with the event filtered out in the kernel, and
        // recording with nobody reading (the drain thread still runs).
        trace_id_t trid;
        if (posix_trace_create(0, nullptr, &trid))
            return 1;
        if (mode == "stream-filtered") {
            trace_event_set_t set;
            posix_trace_eventset_empty(&set);
            posix_trace_eventset_add(id, &set);
            posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET);
        }
        if (mode != "stream-suspended")
            posix_trace_start(trid);
        std::printf("ns_per_event=%.1f\n", emit_ns_per_event(id, count));
        posix_trace_shutdown(trid);
        return 0;
    }
    if (mode == "sustained")
        return run_stream(id, count, 2);
    if (mode == "wake")
        return run_wake(id, count);
    if (mode == "paced" && argc > 3) // paced RATE COUNT
        return run_stream(id, std::atol(argv[3]), 2, std::atof(argv[2]));
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 1;
}
