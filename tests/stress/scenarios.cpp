#include "scenarios.hpp"

#include <fcntl.h>
#include <posix_trace/usdt.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "checker.hpp"
#include "workload.hpp"

namespace stress {

const std::vector<Scenario> &scenarios()
{
    static const std::vector<Scenario> all = {
        {"self", "self-traced, every event type, POSIX_TRACE_LOOP, 64 MiB", POSIX_TRACE_LOOP,
         64u << 20, false, false, false, false, false},
        {"exact", "self-traced, emitter events only: emitted = delivered + lost", POSIX_TRACE_LOOP,
         64u << 20, false, true, false, false, false},
        {"until_full", "POSIX_TRACE_UNTIL_FULL, 64 KiB, slow reader: stops and restarts",
         POSIX_TRACE_UNTIL_FULL, 64u << 10, false, true, true, false, false},
        {"loop_small", "POSIX_TRACE_LOOP, 64 KiB, slow reader: overwrites", POSIX_TRACE_LOOP,
         64u << 10, false, true, true, false, false},
        {"log", "POSIX_TRACE_FLUSH into a trace log, read back with posix_trace_open",
         POSIX_TRACE_FLUSH, 4u << 20, false, false, false, false, false},
        {"bypid", "another process traced by pid, every event type", POSIX_TRACE_LOOP, 64u << 20,
         true, false, false, false, false},
        {"storm", "stop/start and filter changes while recording", POSIX_TRACE_LOOP, 64u << 20,
         false, false, false, true, false},
        {"clear_storm", "stop/start, filter changes and clears while recording (order only)",
         POSIX_TRACE_LOOP, 64u << 20, false, false, false, true, true},
    };
    return all;
}

namespace {

using namespace std::chrono_literals;

// The workload in a child process, driven through two pipes: p(repare),
// g(o), f(inish), r(elease); it answers with its event id, then a byte per
// step, then its counts.
class ChildWorkload {
public:
    explicit ChildWorkload(const WorkloadOptions &options)
    {
        int down[2], up[2];
        if (pipe(down) || pipe(up))
            return;
        pid_ = fork();
        if (pid_ == 0) {
            close(down[1]);
            close(up[0]);
            serve(options, down[0], up[1]);
            _exit(0);
        }
        close(down[0]);
        close(up[1]);
        to_ = down[1];
        from_ = up[0];
        ok_ = read_exact(&event_id_, sizeof event_id_);
    }
    ~ChildWorkload()
    {
        close(to_);
        close(from_);
        if (pid_ > 0)
            waitpid(pid_, nullptr, 0);
    }
    bool ok() const { return ok_; }
    pid_t pid() const { return pid_; }
    trace_event_id_t event_id() const { return event_id_; }
    bool step(char command)
    {
        char done;
        ok_ = ok_ && write(to_, &command, 1) == 1 && read_exact(&done, 1);
        return ok_;
    }
    WorkloadCounts release()
    {
        WorkloadCounts counts;
        char command = 'r';
        ok_ = ok_ && write(to_, &command, 1) == 1 && read_exact(&counts, sizeof counts);
        return counts;
    }

private:
    static void serve(const WorkloadOptions &options, int in, int out)
    {
        trace_event_id_t id = 0;
        posix_trace_eventid_open("stress.event", &id);
        Workload workload(options, id);
        [[maybe_unused]] ssize_t n = write(out, &id, sizeof id);
        for (char command; read(in, &command, 1) == 1;) {
            if (command == 'p')
                workload.prepare();
            else if (command == 'g')
                workload.go();
            else if (command == 'f')
                workload.finish();
            if (command == 'r') {
                WorkloadCounts counts = workload.release();
                n = write(out, &counts, sizeof counts);
                return;
            }
            n = write(out, &command, 1);
        }
    }
    bool read_exact(void *buffer, size_t size)
    {
        auto *bytes = static_cast<char *>(buffer);
        for (size_t got = 0; got < size;) {
            ssize_t n = read(from_, bytes + got, size - got);
            if (n <= 0)
                return false;
            got += size_t(n);
        }
        return true;
    }

    pid_t pid_ = -1;
    int to_ = -1, from_ = -1;
    trace_event_id_t event_id_ = 0;
    bool ok_ = false;
};

// Every event type but the emitters' (and the system events): the
// accounting of emitted events is then exact.
trace_event_set_t emitter_only_filter(trace_event_id_t user, trace_event_id_t usdt)
{
    trace_event_set_t set;
    posix_trace_eventset_fill(&set, POSIX_TRACE_ALL_EVENTS);
    for (trace_event_id_t id :
         {trace_event_id_t(POSIX_TRACE_START), trace_event_id_t(POSIX_TRACE_STOP),
          trace_event_id_t(POSIX_TRACE_FILTER), trace_event_id_t(POSIX_TRACE_OVERFLOW),
          trace_event_id_t(POSIX_TRACE_RESUME), trace_event_id_t(POSIX_TRACE_ERROR),
          trace_event_id_t(POSIX_TRACE_FLUSH_START), trace_event_id_t(POSIX_TRACE_FLUSH_STOP), user,
          usdt})
        posix_trace_eventset_del(id, &set);
    return set;
}

struct Reader {
    std::atomic<bool> stopping{false};
    std::thread thread;

    void start(trace_id_t trid, Checker &checker, bool slow)
    {
        thread = std::thread([this, trid, &checker, slow] { read(trid, checker, slow); });
    }
    void read(trace_id_t trid, Checker &checker, bool slow)
    {
        unsigned char data[8192];
        for (uint64_t n = 0;;) {
            posix_trace_event_info info;
            size_t length = 0;
            int unavailable = 0, err;
            bool last_round = stopping.load();
            if (last_round) {
                err = posix_trace_trygetnext_event(trid, &info, data, sizeof data, &length,
                                                   &unavailable);
            } else {
                timespec deadline;
                clock_gettime(CLOCK_REALTIME, &deadline);
                deadline.tv_nsec += 50'000'000;
                if (deadline.tv_nsec >= 1'000'000'000) {
                    ++deadline.tv_sec;
                    deadline.tv_nsec -= 1'000'000'000;
                }
                err = posix_trace_timedgetnext_event(trid, &info, data, sizeof data, &length,
                                                     &unavailable, &deadline);
            }
            if (err == 0 && !unavailable) {
                checker.on_event(info, data, length);
                if (slow && ++n % 16 == 0)
                    std::this_thread::sleep_for(1ms);
            } else if (last_round || (err && err != ETIMEDOUT)) {
                return;
            }
        }
    }
};

// Stop and start, clear, and filter changes, at random, every 1-3 ms.
struct Storm {
    std::atomic<bool> done{false};
    std::thread thread;
    unsigned actions = 0;

    void start(trace_id_t trid, trace_event_id_t user, bool clears)
    {
        thread = std::thread([this, trid, user, clears] {
            std::mt19937 random(12345);
            trace_event_set_t one;
            posix_trace_eventset_empty(&one);
            posix_trace_eventset_add(user, &one);
            while (!done.load()) {
                std::this_thread::sleep_for(std::chrono::microseconds(1000 + random() % 2000));
                switch (random() % (clears ? 4 : 3)) {
                case 0:
                    posix_trace_stop(trid);
                    std::this_thread::sleep_for(300us);
                    posix_trace_start(trid);
                    break;
                case 1:
                    posix_trace_set_filter(trid, &one, POSIX_TRACE_ADD_EVENTSET);
                    break;
                case 2:
                    posix_trace_set_filter(trid, &one, POSIX_TRACE_SUB_EVENTSET);
                    break;
                default:
                    posix_trace_clear(trid);
                }
                ++actions;
            }
            posix_trace_set_filter(trid, &one, POSIX_TRACE_SUB_EVENTSET);
            posix_trace_start(trid);
        });
    }
};

std::string temporary_log_path()
{
    char path[] = "/tmp/posixtrace-stress-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    return path;
}

// Reads every event of a trace log into the checker.
bool read_log(const std::string &path, Checker &checker)
{
    int fd = open(path.c_str(), O_RDONLY);
    trace_id_t log;
    if (fd < 0 || posix_trace_open(fd, &log) != 0)
        return false;
    unsigned char data[8192];
    posix_trace_event_info info;
    size_t length;
    int unavailable = 0, err = 0;
    while ((err = posix_trace_getnext_event(log, &info, data, sizeof data, &length,
                                            &unavailable)) == 0 &&
           !unavailable)
        checker.on_event(info, data, length);
    posix_trace_close(log);
    close(fd);
    return err == 0;
}

// The id of a stream's event type, from its type list.
trace_event_id_t event_type_named(trace_id_t trid, const char *name)
{
    posix_trace_eventtypelist_rewind(trid);
    trace_event_id_t id;
    int unavailable = 0;
    char found[TRACE_EVENT_NAME_MAX];
    while (posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0 && !unavailable)
        if (posix_trace_eventid_get_name(trid, id, found) == 0 && std::strcmp(found, name) == 0)
            return id;
    return 0;
}

struct Stream {
    trace_id_t trid = 0;
    int err = 0;
};

Stream create_stream(const Scenario &scenario, pid_t pid, int log_fd)
{
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setstreamsize(&attr, scenario.stream_size);
    posix_trace_attr_setstreamfullpolicy(&attr, scenario.stream_full_policy);
    posix_trace_attr_setlogfullpolicy(&attr, POSIX_TRACE_APPEND);
    Stream stream;
    stream.err = log_fd >= 0 ? posix_trace_create_withlog(pid, &attr, log_fd, &stream.trid)
                             : posix_trace_create(pid, &attr, &stream.trid);
    posix_trace_attr_destroy(&attr);
    return stream;
}

// ", lost: N ring full, N late, ..." for the causes with a count.
std::string loss_causes(const posix_trace_loss_counters &losses)
{
    std::string text;
    auto add = [&](uint64_t count, const char *cause) {
        if (count)
            text += (text.empty() ? ", lost: " : ", ") + std::to_string(count) + " " + cause;
    };
    add(losses.ring_full, "ring full");
    add(losses.runs_skipped, "runs skipped");
    add(losses.late, "late");
    add(losses.overwritten, "overwritten");
    add(losses.refused, "refused");
    return text;
}

void print_result(const Scenario &scenario, double seconds, const Checker &checker,
                  const std::vector<std::string> &violations, const std::string &extra)
{
    std::printf("stress %-10s %4.1f s: %s%s: %s\n", scenario.name, seconds,
                checker.summary().c_str(), extra.c_str(), violations.empty() ? "ok" : "FAILED");
    for (const auto &violation : violations)
        std::printf("    %s\n", violation.c_str());
    std::fflush(stdout);
}

} // namespace

bool run(const Scenario &scenario, double seconds)
{
    CpuHogs hogs; // forked before any thread of this run
    WorkloadOptions options;
    std::optional<ChildWorkload> child;
    std::optional<Workload> local;
    trace_event_id_t user = 0;
    if (scenario.by_pid) {
        child.emplace(options);
        user = child->event_id();
    } else {
        posix_trace_eventid_open("stress.event", &user);
        local.emplace(options, user);
    }
    bool logged = scenario.stream_full_policy == POSIX_TRACE_FLUSH;
    std::string log_path = logged ? temporary_log_path() : "";
    int log_fd = logged ? open(log_path.c_str(), O_WRONLY | O_TRUNC) : -1;
    Stream stream = create_stream(scenario, child ? child->pid() : 0, log_fd);
    if (stream.err) {
        std::printf("stress %-10s: posix_trace_create: %s: FAILED\n", scenario.name,
                    std::strerror(stream.err));
        return false;
    }
    trace_id_t trid = stream.trid;
    size_t attached = 0;
    posix_trace_usdt_attach(trid, "stress:tick", &attached);
    trace_event_id_t usdt = attached ? event_type_named(trid, "stress:tick") : 0;

    CheckerOptions check;
    check.user_event = user;
    check.usdt_event = usdt;
    check.only_emitter_events = scenario.emitter_events_only;
    check.thread_events = !scenario.emitter_events_only;
    check.controls_storm = scenario.storm;
    check.clears = scenario.clears;
    if (scenario.emitter_events_only) {
        check.initial_filter = emitter_only_filter(user, usdt);
        posix_trace_set_filter(trid, &check.initial_filter, POSIX_TRACE_SET_EVENTSET);
    }
    Checker checker(check);

    if (child)
        child->step('p');
    else
        local->prepare();
    Reader reader;
    Storm storm;
    if (!logged)
        reader.start(trid, checker, scenario.slow_reader);
    posix_trace_start(trid);
    if (scenario.storm)
        storm.start(trid, user, scenario.clears);
    child ? (void)child->step('g') : local->go();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    if (scenario.storm) {
        storm.done = true;
        storm.thread.join();
    }
    child ? (void)child->step('f') : local->finish();
    posix_trace_stop(trid);
    WorkloadCounts counts = child ? child->release() : local->release();
    if (child && !child->ok()) {
        std::printf("stress %-10s: the traced child failed: FAILED\n", scenario.name);
        posix_trace_shutdown(trid);
        return false;
    }
    // Where the losses came from, printed with the result (read before a
    // shutdown, after which the trid is gone).
    posix_trace_loss_counters losses{};
    posix_trace_get_loss_counters(trid, &losses);
    std::vector<std::string> violations;
    if (losses.late) // the merge never overtakes a writer: none may come late
        violations.push_back(std::to_string(losses.late) + " records came after younger ones");
    if (logged) {
        int err = posix_trace_shutdown(trid);
        close(log_fd);
        if (err || !read_log(log_path, checker))
            violations.push_back("the trace log could not be written or read back");
        unlink(log_path.c_str());
    } else {
        reader.stopping = true;
        reader.thread.join();
    }
    posix_trace_counters counters{};
    posix_trace_get_counters(trid, &counters);
    if (!logged)
        posix_trace_shutdown(trid);
    uint64_t counted = logged ? checker.lost() : counters.lost_in_kernel + counters.lost_in_stream;
    auto found = checker.finish(counts, counted);
    violations.insert(violations.end(), found.begin(), found.end());
    std::string extra =
        scenario.storm ? ", " + std::to_string(storm.actions) + " storm actions" : "";
    extra += loss_causes(losses);
    print_result(scenario, seconds, checker, violations, extra);
    return violations.empty();
}

} // namespace stress
