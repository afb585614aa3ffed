// What a stream keeps of a burst, and what a stream's life costs. Modes:
//   memory THREADS N     THREADS threads emit N events of 64 bytes in all, as
//                        fast as they can, into a 512 MiB UNTIL_FULL stream
//                        (room for every one of them); read after the stop
//   log THREADS N FILE   the same into a 64 MiB FLUSH stream with a log at
//                        FILE; the log is read back after the shutdown
//                        (log_read_per_s: its events a second, from
//                        posix_trace_open to the last getnext)
//   log-warm THREADS N FILE
//                        two bursts into the same stream with a log; the CPU
//                        the drain and the log writer spent on the second,
//                        an event: the first left every page the stream's
//                        side uses written once, so the second measures the
//                        work rather than this host's cost of fresh memory
//                        (two builds compared side by side)
//   loop THREADS N       the same into a 1 MiB LOOP stream, which keeps the
//                        newest of them; read after the stop. newest=1 when
//                        the last event read is the last of its thread
//   read THREADS N       the same as memory, but the main thread reads with
//                        posix_trace_getnext_event while the threads emit;
//                        then, a second time, reads a stopped stream holding
//                        the whole burst. Prints the events a second the
//                        reader received in each case
//   life CYCLES          CYCLES times: create a stream of this process,
//                        start it, emit one event, shut it down; the times
//                        of each step after the first cycle, and how many
//                        of the events were read back
//   life-pid CYCLES      the same with streams of two child processes in
//                        turn, traced by pid, each emitting the event
// Each prints one line of key=value: ns_per_event (in the emitting threads),
// kept (the events read back), lost (as the stream reports it); for memory
// and log, tracer_cpu_per_event_ns first (the CPU the process spent beyond
// its emitting threads until the stream stopped, or, with a log, until it
// was shut down and the log written, per event); for `log-warm`,
// drain_cpu_per_event_ns and log_cpu_per_event_ns over the second burst, its
// ns_per_event, and lost_in_a_lane over both; for `life`, the median and the
// largest milliseconds of create, start and shutdown.
#include <dirent.h>
#include <fcntl.h>
#include <posix_trace/events.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Kept {
    uint64_t events = 0;
    uint64_t lost = 0;    // as the overflow events say
    long last_index = -1; // the index the last event's payload starts with
};

// Reads one event, blocking (`block`: getnext) or not (trygetnext), into
// `kept`; false when there was none, or at the end of a log.
bool read_one(trace_id_t trid, trace_event_id_t id, bool block, Kept &kept)
{
    unsigned char data[256];
    posix_trace_event_info info;
    size_t length = 0;
    int unavailable = 0;
    int err =
        block ? posix_trace_getnext_event(trid, &info, data, sizeof data, &length, &unavailable)
              : posix_trace_trygetnext_event(trid, &info, data, sizeof data, &length, &unavailable);
    if (err || unavailable)
        return false;
    if (info.posix_event_id == id) {
        ++kept.events;
        if (length >= sizeof kept.last_index)
            std::memcpy(&kept.last_index, data, sizeof kept.last_index);
    } else if (info.posix_event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data overflow;
        std::memcpy(&overflow, data, sizeof overflow);
        kept.lost += overflow.lost;
    }
    return true;
}

// Every event left in `trid` (an active stream, stopped, or a log: a log
// never waits, and trygetnext is an error for it).
Kept read_all(trace_id_t trid, trace_event_id_t id, bool from_log)
{
    Kept kept;
    while (read_one(trid, id, from_log, kept)) {
    }
    return kept;
}

uint64_t cpu_ns(clockid_t clock)
{
    timespec now;
    clock_gettime(clock, &now);
    return uint64_t(now.tv_sec) * 1'000'000'000 + uint64_t(now.tv_nsec);
}

// THREADS threads emit `total` events together, flat out; the mean ns an
// event in the emitting threads. `emitters_cpu_ns`, if given, adds the CPU
// time the emitting threads spent.
double emit_burst(trace_event_id_t id, long total, int threads, uint64_t *emitters_cpu_ns = nullptr)
{
    std::vector<double> ns(size_t(threads), 0);
    std::vector<uint64_t> cpu(size_t(threads), 0);
    std::vector<std::thread> emitters;
    for (int t = 0; t < threads; ++t)
        emitters.emplace_back([&, t] {
            uint64_t began = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
            ns[size_t(t)] = emit_payload64(id, total / threads);
            cpu[size_t(t)] = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - began;
        });
    for (auto &emitter : emitters)
        emitter.join();
    double mean = 0;
    for (double each : ns)
        mean += each / threads;
    if (emitters_cpu_ns)
        for (uint64_t each : cpu)
            *emitters_cpu_ns += each;
    return mean;
}

// What recording cost beyond the emitting threads: the CPU the process
// spent from its construction to tracer_ns_per_event() (the drain and log
// threads, and the calls that stop the stream and flush it), less the
// emitters' own, per event emitted.
class TracerCpu {
public:
    TracerCpu() : began_(cpu_ns(CLOCK_PROCESS_CPUTIME_ID)) {}
    uint64_t emitters_ns = 0;
    double ns_per_event(long events) const
    {
        uint64_t spent = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - began_;
        return double(spent > emitters_ns ? spent - emitters_ns : 0) / double(events);
    }

private:
    uint64_t began_;
};

trace_attr_t attributes(size_t stream_bytes, int policy)
{
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setstreamsize(&attr, stream_bytes);
    posix_trace_attr_setstreamfullpolicy(&attr, policy);
    return attr;
}

// A started 512 MiB UNTIL_FULL stream of this process, room for every
// event of the burst; false if it could not be created.
bool start_memory_stream(trace_id_t &trid)
{
    trace_attr_t attr = attributes(512u << 20, POSIX_TRACE_UNTIL_FULL);
    if (int err = posix_trace_create(0, &attr, &trid)) {
        std::fprintf(stderr, "posix_trace_create: %s\n", std::strerror(err));
        return false;
    }
    filter_out_thread_events(trid);
    posix_trace_start(trid);
    return true;
}

int burst_in_memory(trace_event_id_t id, int threads, long total)
{
    trace_id_t trid;
    if (!start_memory_stream(trid))
        return 1;
    TracerCpu tracer;
    double ns = emit_burst(id, total, threads, &tracer.emitters_ns);
    posix_trace_stop(trid);
    double tracer_ns = tracer.ns_per_event(total);
    Kept kept = read_all(trid, id, false);
    posix_trace_counters counters{};
    posix_trace_get_counters(trid, &counters);
    posix_trace_shutdown(trid);
    std::printf("tracer_cpu_per_event_ns=%.1f ns_per_event=%.1f kept=%lu lost=%lu\n", tracer_ns, ns,
                (unsigned long)kept.events,
                (unsigned long)(counters.lost_in_kernel + counters.lost_in_stream));
    return 0;
}

// The events of a stopped LOOP stream: how many, the reported losses, and
// whether the last one read is the last its thread emitted (the index the
// payload starts with).
int burst_in_loop(trace_event_id_t id, int threads, long total)
{
    trace_attr_t attr = attributes(1u << 20, POSIX_TRACE_LOOP);
    trace_id_t trid;
    if (int err = posix_trace_create(0, &attr, &trid)) {
        std::fprintf(stderr, "posix_trace_create: %s\n", std::strerror(err));
        return 1;
    }
    filter_out_thread_events(trid);
    posix_trace_start(trid);
    double ns = emit_burst(id, total, threads);
    posix_trace_stop(trid);
    Kept kept = read_all(trid, id, false);
    posix_trace_shutdown(trid);
    std::printf("ns_per_event=%.1f kept=%lu lost=%lu newest=%d\n", ns, (unsigned long)kept.events,
                (unsigned long)kept.lost, kept.last_index == total / threads - 1);
    return 0;
}

double seconds_since(Clock::time_point begin)
{
    return std::chrono::duration<double>(Clock::now() - begin).count();
}

// A started 64 MiB FLUSH stream of this process with a log at `path`;
// false if it could not be created.
bool start_log_stream(const char *path, int &fd, trace_id_t &trid)
{
    trace_attr_t attr = attributes(64u << 20, POSIX_TRACE_FLUSH);
    posix_trace_attr_setlogsize(&attr, 1ul << 30);
    fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 || posix_trace_create_withlog(0, &attr, fd, &trid) != 0) {
        std::fprintf(stderr, "posix_trace_create_withlog failed\n");
        return false;
    }
    filter_out_thread_events(trid);
    posix_trace_start(trid);
    return true;
}

int burst_to_log(trace_event_id_t id, int threads, long total, const char *path)
{
    int fd;
    trace_id_t trid;
    if (!start_log_stream(path, fd, trid))
        return 1;
    TracerCpu tracer;
    double ns = emit_burst(id, total, threads, &tracer.emitters_ns);
    posix_trace_counters counters{};
    posix_trace_loss_counters losses{};
    posix_trace_stop(trid);
    posix_trace_get_counters(trid, &counters);
    posix_trace_get_loss_counters(trid, &losses);
    posix_trace_shutdown(trid); // the last flush is written
    double tracer_ns = tracer.ns_per_event(total);
    close(fd);
    auto read_begin = Clock::now();
    fd = open(path, O_RDONLY | O_CLOEXEC);
    trace_id_t log;
    if (fd < 0 || posix_trace_open(fd, &log) != 0) {
        std::fprintf(stderr, "posix_trace_open failed\n");
        return 1;
    }
    trace_event_id_t logged_id = id;
    posix_trace_trid_eventid_open(log, "bench:payload64", &logged_id);
    Kept kept = read_all(log, logged_id, true);
    double read_seconds = seconds_since(read_begin);
    posix_trace_close(log);
    close(fd);
    unlink(path);
    std::printf("lost in a lane=%lu refused=%lu\n", (unsigned long)losses.ring_full,
                (unsigned long)losses.refused);
    std::printf("tracer_cpu_per_event_ns=%.1f ns_per_event=%.1f kept=%lu lost=%lu "
                "log_read_per_s=%.0f\n",
                tracer_ns, ns, (unsigned long)kept.events,
                (unsigned long)(counters.lost_in_kernel + counters.lost_in_stream),
                double(kept.events) / read_seconds);
    return 0;
}

// The CPU the threads of this process named `name` have spent so far.
uint64_t thread_cpu_ns(const char *name)
{
    uint64_t total = 0;
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks)
        return 0;
    while (dirent *task = readdir(tasks)) {
        std::string base = std::string("/proc/self/task/") + task->d_name;
        char comm[32] = {};
        unsigned long long ns = 0;
        if (FILE *file = std::fopen((base + "/comm").c_str(), "r")) {
            if (!std::fgets(comm, sizeof comm, file))
                comm[0] = 0;
            std::fclose(file);
        }
        comm[std::strcspn(comm, "\n")] = 0;
        if (std::strcmp(comm, name) != 0)
            continue;
        if (FILE *file = std::fopen((base + "/schedstat").c_str(), "r")) {
            if (std::fscanf(file, "%llu", &ns) == 1)
                total += ns;
            std::fclose(file);
        }
    }
    closedir(tasks);
    return total;
}

// A flush of the stream into its log, waited for until its blocks are written.
void flush_and_wait(trace_id_t trid)
{
    posix_trace_flush(trid);
    posix_trace_status_info status{};
    do
        usleep(1000);
    while (posix_trace_get_status(trid, &status) == 0 &&
           status.posix_stream_flush_status == POSIX_TRACE_FLUSHING);
}

int warm_burst_to_log(trace_event_id_t id, int threads, long total, const char *path)
{
    int fd;
    trace_id_t trid;
    if (!start_log_stream(path, fd, trid))
        return 1;
    emit_burst(id, total, threads);
    flush_and_wait(trid);
    uint64_t drain = thread_cpu_ns("posixtrace-drn"), writer = thread_cpu_ns("posixtrace-log");
    double ns = emit_burst(id, total, threads);
    posix_trace_stop(trid);
    flush_and_wait(trid);
    drain = thread_cpu_ns("posixtrace-drn") - drain;
    writer = thread_cpu_ns("posixtrace-log") - writer;
    posix_trace_loss_counters losses{};
    posix_trace_get_loss_counters(trid, &losses);
    posix_trace_shutdown(trid);
    close(fd);
    unlink(path);
    std::printf("drain_cpu_per_event_ns=%.1f log_cpu_per_event_ns=%.1f ns_per_event=%.1f "
                "lost_in_a_lane=%lu\n",
                double(drain) / double(total), double(writer) / double(total), ns,
                (unsigned long)losses.ring_full);
    return 0;
}

// Reads `total` events of `id` as they come, blocking in getnext; the events
// a second, from the start of the burst to the last one read.
double read_while_emitting(trace_id_t trid, trace_event_id_t id, long total, int threads,
                           Kept &kept, double &ns)
{
    auto begin = Clock::now();
    std::thread burst([&] { ns = emit_burst(id, total, threads); });
    while (kept.events + kept.lost < uint64_t(total) && read_one(trid, id, true, kept)) {
    }
    double seconds = seconds_since(begin);
    burst.join();
    return double(kept.events) / seconds;
}

int read_during_burst(trace_event_id_t id, int threads, long total)
{
    trace_id_t trid;
    if (!start_memory_stream(trid))
        return 1;
    Kept kept;
    double ns = 0;
    double concurrent = read_while_emitting(trid, id, total, threads, kept, ns);
    emit_burst(id, total, threads); // again, read only once the stream stopped
    posix_trace_stop(trid);
    auto begin = Clock::now();
    Kept stopped = read_all(trid, id, false);
    double stopped_rate = double(stopped.events) / seconds_since(begin);
    posix_trace_shutdown(trid);
    std::printf("ns_per_event=%.1f kept=%lu lost=%lu read_per_s=%.0f stopped_kept=%lu "
                "stopped_read_per_s=%.0f\n",
                ns, (unsigned long)kept.events, (unsigned long)kept.lost, concurrent,
                (unsigned long)stopped.events, stopped_rate);
    return 0;
}

double ms_since(Clock::time_point begin)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
}

struct Spread {
    double median, most;
};

Spread spread_of(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return {values[values.size() / 2], values.back()};
}

// A child process that emits the event once for each byte it reads, and
// answers each with a byte once it has; it exits at the end of its input.
class EmittingChild {
public:
    explicit EmittingChild(trace_event_id_t id)
    {
        int to_child[2], from_child[2];
        if (pipe(to_child) != 0 || pipe(from_child) != 0)
            std::exit(1);
        pid_ = fork();
        if (pid_ == 0) {
            close(to_child[1]); // its input ends when the parent closes its end
            close(from_child[0]);
            char byte;
            while (read(to_child[0], &byte, 1) == 1) {
                posix_trace_event(id, nullptr, 0);
                if (write(from_child[1], &byte, 1) != 1)
                    break;
            }
            _exit(0);
        }
        close(to_child[0]);
        close(from_child[1]);
        to_child_ = to_child[1];
        from_child_ = from_child[0];
    }
    ~EmittingChild()
    {
        close(to_child_);
        close(from_child_);
        waitpid(pid_, nullptr, 0);
    }
    pid_t pid() const { return pid_; }
    void emit()
    {
        char byte = 'e';
        if (write(to_child_, &byte, 1) != 1 || read(from_child_, &byte, 1) != 1)
            std::exit(1);
    }

private:
    pid_t pid_ = -1;
    int to_child_ = -1, from_child_ = -1;
};

// Streams of `target(cycle)`, in which `emit(cycle)` makes one event.
int stream_lives(trace_event_id_t id, int cycles, const std::function<pid_t(int)> &target,
                 const std::function<void(int)> &emit)
{
    std::vector<double> create, start, shutdown;
    double first_create = 0, first_shutdown = 0;
    uint64_t kept = 0;
    for (int cycle = 0; cycle <= cycles; ++cycle) {
        trace_id_t trid;
        auto begin = Clock::now();
        if (posix_trace_create(target(cycle), nullptr, &trid) != 0)
            return 1;
        double created = ms_since(begin);
        begin = Clock::now();
        posix_trace_start(trid);
        double started = ms_since(begin);
        emit(cycle);
        posix_trace_stop(trid); // not timed: the event must have been kept
        kept += read_all(trid, id, false).events;
        begin = Clock::now();
        posix_trace_shutdown(trid);
        double shut = ms_since(begin);
        if (cycle == 0) { // the first of the process loads and links what the others reuse
            first_create = created;
            first_shutdown = shut;
            continue;
        }
        create.push_back(created);
        start.push_back(started);
        shutdown.push_back(shut);
    }
    Spread c = spread_of(create), s = spread_of(start), d = spread_of(shutdown);
    std::printf("create_ms=%.2f create_max_ms=%.2f start_ms=%.2f start_max_ms=%.2f "
                "shutdown_ms=%.2f shutdown_max_ms=%.2f first_create_ms=%.2f "
                "first_shutdown_ms=%.2f kept=%llu of=%d\n",
                c.median, c.most, s.median, s.most, d.median, d.most, first_create, first_shutdown,
                (unsigned long long)kept, cycles + 1);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    std::string mode = argc > 1 ? argv[1] : "";
    trace_event_id_t id;
    posix_trace_eventid_open("bench:payload64", &id);
    if (mode == "memory" && argc == 4)
        return burst_in_memory(id, std::atoi(argv[2]), std::atol(argv[3]));
    if (mode == "log" && argc == 5)
        return burst_to_log(id, std::atoi(argv[2]), std::atol(argv[3]), argv[4]);
    if (mode == "log-warm" && argc == 5)
        return warm_burst_to_log(id, std::atoi(argv[2]), std::atol(argv[3]), argv[4]);
    if (mode == "loop" && argc == 4)
        return burst_in_loop(id, std::atoi(argv[2]), std::atol(argv[3]));
    if (mode == "read" && argc == 4)
        return read_during_burst(id, std::atoi(argv[2]), std::atol(argv[3]));
    int cycles = argc == 3 ? std::atoi(argv[2]) : 0;
    if (mode == "life" && cycles > 0)
        return stream_lives(
            id, cycles, [](int) { return pid_t(0); },
            [id](int) { posix_trace_event(id, nullptr, 0); });
    if (mode == "life-pid" && cycles > 0) {
        EmittingChild children[2] = {EmittingChild(id), EmittingChild(id)};
        return stream_lives(
            id, cycles, [&](int cycle) { return children[cycle % 2].pid(); },
            [&](int cycle) { children[cycle % 2].emit(); });
    }
    std::fprintf(stderr,
                 "usage: %s memory THREADS N | log THREADS N FILE | log-warm THREADS N FILE | "
                 "loop THREADS N | "
                 "read THREADS N | life CYCLES | life-pid CYCLES\n",
                 argv[0]);
    return 2;
}
