// Benchmarks of recording to a trace log. Modes:
//   log FILE RATE SECONDS     2 threads emit RATE events/s in all (0: as fast as
//                             they can) for SECONDS into a stream with log
//                             (POSIX_TRACE_FLUSH, APPEND) written to FILE
//   memory RATE SECONDS       the same into an in-memory stream drained by a
//                             reader thread: the peer the log is measured against
//   fill FILE COUNT [RATE]    writes a log of COUNT events at RATE events/s in
//                             all (default 1,000,000: the log keeps up, so
//                             the log holds them all; 0: as fast as they can,
//                             which outruns the log and loses most of them)
// Every event carries 64 bytes. Prints one line of key=value.
#include <fcntl.h>
#include <posix_trace/events.h>
#include <sys/stat.h>
#include <trace.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPayload = 64;
constexpr int kEmitters = 2;

// Emits for `seconds` at `rate` events/s (0: unpaced), or `count` events.
uint64_t emit(trace_event_id_t id, double rate, double seconds, uint64_t count)
{
    unsigned char payload[kPayload];
    std::memset(payload, 0xab, sizeof payload);
    auto begin = Clock::now();
    uint64_t emitted = 0;
    for (;;) {
        double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
        if (count ? emitted >= count : elapsed >= seconds)
            return emitted;
        uint64_t due = rate > 0 ? uint64_t(rate * (elapsed + 0.001)) : emitted + 1000;
        for (; emitted < due && (!count || emitted < count); ++emitted) {
            std::memcpy(payload, &emitted, sizeof emitted);
            posix_trace_event(id, payload, sizeof payload);
        }
        if (rate > 0)
            std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
}

struct Emitted {
    uint64_t events = 0;
    double seconds = 0;
};

Emitted run_emitters(trace_event_id_t id, double rate, double seconds, uint64_t count)
{
    std::vector<std::thread> threads;
    std::atomic<uint64_t> total{0};
    auto begin = Clock::now();
    for (int t = 0; t < kEmitters; ++t)
        threads.emplace_back(
            [&] { total += emit(id, rate / kEmitters, seconds, count / kEmitters); });
    for (auto &thread : threads)
        thread.join();
    return {total.load(), std::chrono::duration<double>(Clock::now() - begin).count()};
}

struct Counted {
    uint64_t user = 0;
    uint64_t lost = 0;
};

// One event into the totals; false at the end.
bool count_next(trace_id_t trid, trace_event_id_t user_id, Counted &counted, int &err, bool timed)
{
    posix_trace_event_info info;
    unsigned char data[256];
    size_t len;
    int unavailable = 0;
    if (timed) {
        timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 1;
        err = posix_trace_timedgetnext_event(trid, &info, data, sizeof data, &len, &unavailable,
                                             &deadline);
    } else {
        err = posix_trace_getnext_event(trid, &info, data, sizeof data, &len, &unavailable);
    }
    if (err || unavailable)
        return false;
    if (info.posix_event_id == user_id)
        counted.user++;
    else if (info.posix_event_id == POSIX_TRACE_OVERFLOW &&
             len >= sizeof(posix_trace_overflow_data)) {
        posix_trace_overflow_data overflow;
        std::memcpy(&overflow, data, sizeof overflow);
        counted.lost += overflow.lost;
    }
    return true;
}

Counted count_log(const char *path, trace_event_id_t user_id)
{
    Counted counted;
    int fd = open(path, O_RDONLY);
    trace_id_t trid;
    if (fd < 0 || posix_trace_open(fd, &trid) != 0) {
        std::fprintf(stderr, "cannot open the log %s\n", path);
        std::exit(1);
    }
    int err = 0;
    while (count_next(trid, user_id, counted, err, false)) {
    }
    posix_trace_close(trid);
    close(fd);
    return counted;
}

off_t file_size(const char *path)
{
    struct stat st {};
    stat(path, &st);
    return st.st_size;
}

int run_log(const char *path, trace_event_id_t id, double rate, double seconds, uint64_t count)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_FLUSH);
    posix_trace_attr_setlogfullpolicy(&attr, POSIX_TRACE_APPEND);
    trace_id_t trid;
    if (int err = posix_trace_create_withlog(0, &attr, fd, &trid)) {
        std::fprintf(stderr, "posix_trace_create_withlog: %s\n", std::strerror(err));
        return 1;
    }
    filter_out_thread_events(trid);
    posix_trace_start(trid);
    Emitted emitted = run_emitters(id, rate, seconds, count);
    auto stop_begin = Clock::now();
    int err = posix_trace_shutdown(trid);
    double shutdown_seconds = std::chrono::duration<double>(Clock::now() - stop_begin).count();
    close(fd);
    if (err) {
        std::fprintf(stderr, "posix_trace_shutdown: %s\n", std::strerror(err));
        return 1;
    }
    Counted logged = count_log(path, id);
    double total = emitted.seconds + shutdown_seconds;
    std::printf("emitted=%lu logged=%lu lost=%lu events_per_s=%.0f mb_per_s=%.1f "
                "log_mb=%.1f shutdown_ms=%.0f\n",
                (unsigned long)emitted.events, (unsigned long)logged.user,
                (unsigned long)logged.lost, double(logged.user) / total,
                double(file_size(path)) / total / 1e6, double(file_size(path)) / 1e6,
                shutdown_seconds * 1e3);
    return 0;
}

int run_memory(trace_event_id_t id, double rate, double seconds)
{
    trace_id_t trid;
    if (posix_trace_create(0, nullptr, &trid))
        return 1;
    filter_out_thread_events(trid);
    posix_trace_start(trid);
    std::atomic<bool> done{false};
    Counted read;
    std::thread reader([&] {
        int err = 0;
        while (count_next(trid, id, read, err, true) || (err == ETIMEDOUT && !done)) {
        }
    });
    Emitted emitted = run_emitters(id, rate, seconds, 0);
    posix_trace_stop(trid);
    done = true;
    reader.join();
    posix_trace_shutdown(trid);
    std::printf("emitted=%lu read=%lu lost=%lu events_per_s=%.0f\n", (unsigned long)emitted.events,
                (unsigned long)read.user, (unsigned long)read.lost,
                double(read.user) / emitted.seconds);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    std::string mode = argc > 1 ? argv[1] : "";
    trace_event_id_t id;
    posix_trace_eventid_open("bench:payload64", &id);
    if (mode == "log" && argc == 5)
        return run_log(argv[2], id, std::atof(argv[3]), std::atof(argv[4]), 0);
    if (mode == "memory" && argc == 4)
        return run_memory(id, std::atof(argv[2]), std::atof(argv[3]));
    if (mode == "fill" && (argc == 4 || argc == 5))
        return run_log(argv[2], id, argc == 5 ? std::atof(argv[4]) : 1e6, 0,
                       std::strtoull(argv[3], nullptr, 10));
    std::fprintf(stderr,
                 "usage: %s log FILE RATE SECONDS | memory RATE SECONDS | fill FILE COUNT [RATE]\n",
                 argv[0]);
    return 1;
}
