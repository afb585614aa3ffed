// Helpers shared by the stream API tests: a guard that always shuts a stream
// down, event reading helpers, and a way to run a possibly blocking call in a
// thread that a failing test can abandon instead of hanging.
#pragma once

#include <posix_trace/events.h>
#include <trace.h>

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../bench/bench_support.hpp" // filter_thread_events, shared with the benchmarks

namespace test_support {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
public:
    TempDir()
    {
        char name[] = "/tmp/posixtrace-test-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        path_ = name;
    }
    ~TempDir()
    {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    std::string operator/(const std::string &name) const { return path_ + "/" + name; }
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

inline double ms_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

inline timespec realtime_now()
{
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    return now;
}

// Now on the clock of `trid`'s stamps: CLOCK_MONOTONIC, the kernel's clock,
// shifted by the offset the stream converts it to realtime with (sampled at
// its creation). A window read so brackets its events' stamps even when
// CLOCK_REALTIME is stepped meanwhile (a virtual machine snapshotted
// mid-test had it jump 2 ms).
inline timespec stream_clock_now(trace_id_t trid)
{
    posix_trace_origin origin{};
    REQUIRE(posix_trace_get_origin(trid, &origin) == 0);
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec + origin.realtime_offset_ns;
    return {time_t(ns / 1000000000LL), long(ns % 1000000000LL)};
}

inline timespec realtime_in(long long delta_ns)
{
    timespec t = realtime_now();
    long long ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec + delta_ns;
    t.tv_sec = time_t(ns / 1000000000LL);
    t.tv_nsec = long(ns % 1000000000LL);
    return t;
}

inline bool timespec_le(const timespec &a, const timespec &b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

// An initialised trace_attr_t, destroyed when it leaves scope.
struct Attr {
    trace_attr_t attr{};
    Attr() { REQUIRE(posix_trace_attr_init(&attr) == 0); }
    ~Attr() { posix_trace_attr_destroy(&attr); }
    Attr(const Attr &) = delete;
    Attr &operator=(const Attr &) = delete;
    trace_attr_t *get() { return &attr; }
};

// The stream's status (the test fails if it cannot be had).
inline posix_trace_status_info status_of(trace_id_t trid)
{
    posix_trace_status_info status{};
    REQUIRE(posix_trace_get_status(trid, &status) == 0);
    return status;
}

inline bool is_thread_event(trace_event_id_t id)
{
    return id >= POSIX_TRACE_TD_EVENT_FIRST &&
           id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT;
}

// Owns a trace stream: shuts it down when the test leaves its scope, even
// through a failed REQUIRE (at most TRACE_SYS_MAX streams exist system-wide).
class StreamGuard {
public:
    StreamGuard() = default;
    explicit StreamGuard(trace_id_t trid) : trid_(trid), live_(true) {}
    StreamGuard(StreamGuard &&other) noexcept : trid_(other.trid_), live_(other.live_)
    {
        other.live_ = false;
    }
    StreamGuard &operator=(StreamGuard &&other) noexcept
    {
        if (this != &other) {
            reset();
            trid_ = other.trid_;
            live_ = other.live_;
            other.live_ = false;
        }
        return *this;
    }
    StreamGuard(const StreamGuard &) = delete;
    StreamGuard &operator=(const StreamGuard &) = delete;
    ~StreamGuard() { reset(); }

    trace_id_t get() const { return trid_; }
    // Shuts the stream down now; returns what posix_trace_shutdown returned.
    int shutdown()
    {
        live_ = false;
        return posix_trace_shutdown(trid_);
    }
    void reset()
    {
        if (live_)
            posix_trace_shutdown(trid_);
        live_ = false;
    }

private:
    trace_id_t trid_ = 0;
    bool live_ = false;
};

// Creates a stream tracing this process; the test stops if that fails.
inline StreamGuard make_stream(const trace_attr_t *attr = nullptr)
{
    trace_id_t trid = 0;
    int err = posix_trace_create(0, attr, &trid);
    INFO("posix_trace_create: " << err << " (" << std::strerror(err) << ")");
    REQUIRE(err == 0);
    return StreamGuard(trid);
}

// Filters out the thread (TD) events, so that a stream of this process only
// records the events a test emits itself (its own threads sleeping, waking
// and being created would otherwise add events). Call before start: no
// posix_trace_filter event is recorded then.
inline void filter_thread_events(trace_id_t trid)
{
    REQUIRE(filter_out_thread_events(trid) == 0);
}

struct Event {
    posix_trace_event_info info{};
    std::vector<unsigned char> data;
};

constexpr size_t kReadBufferBytes = 16384;

// Reads with posix_trace_trygetnext_event until nothing is available.
// Thread events (ids 16..29) are skipped: they depend on scheduling.
inline std::vector<Event> read_available(trace_id_t trid, bool skip_thread_events = true)
{
    std::vector<Event> events;
    std::vector<unsigned char> buffer(kReadBufferBytes);
    // A guard against a stream that never runs dry, far above what any
    // test's stream holds: reaching it fails the test, never cuts it short.
    for (int guard = 0;; ++guard) {
        if (guard == 20'000'000) {
            FAIL_CHECK("posix_trace_trygetnext_event still had events after " << guard);
            break;
        }
        Event event;
        size_t len = 0;
        int unavailable = -1;
        int err = posix_trace_trygetnext_event(trid, &event.info, buffer.data(), buffer.size(),
                                               &len, &unavailable);
        if (err != 0) {
            FAIL_CHECK("posix_trace_trygetnext_event returned " << err);
            break;
        }
        if (unavailable)
            break;
        if (skip_thread_events && is_thread_event(event.info.posix_event_id))
            continue;
        event.data.assign(buffer.begin(),
                          buffer.begin() + std::ptrdiff_t(std::min(len, buffer.size())));
        events.push_back(std::move(event));
    }
    return events;
}

inline std::vector<trace_event_id_t> ids_of(const std::vector<Event> &events)
{
    std::vector<trace_event_id_t> ids;
    for (const auto &e : events)
        ids.push_back(e.info.posix_event_id);
    return ids;
}

inline trace_event_id_t user_event(const char *name)
{
    trace_event_id_t id = 0;
    REQUIRE(posix_trace_eventid_open(name, &id) == 0);
    return id;
}

// The outcome of one getnext call made in another thread.
struct ReadResult {
    int err = -1;
    int unavailable = -1;
    size_t data_len = 0;
    posix_trace_event_info info{};
    Clock::time_point returned_at{};
};

// Runs f in a detached thread. A test that sees the future never become
// ready reports a failure and moves on (shutting the stream down usually
// releases the thread) instead of hanging. f must capture by value only.
template <class F> auto run_detached(F f) -> std::future<decltype(f())>
{
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto future = task.get_future();
    std::thread(std::move(task)).detach();
    return future;
}

enum class GetNext { Block, Try, Timed };

inline ReadResult get_next(trace_id_t trid, GetNext how, const timespec *abstime = nullptr)
{
    ReadResult r;
    unsigned char data[kReadBufferBytes];
    switch (how) {
    case GetNext::Block:
        r.err = posix_trace_getnext_event(trid, &r.info, data, sizeof data, &r.data_len,
                                          &r.unavailable);
        break;
    case GetNext::Try:
        r.err = posix_trace_trygetnext_event(trid, &r.info, data, sizeof data, &r.data_len,
                                             &r.unavailable);
        break;
    case GetNext::Timed:
        r.err = posix_trace_timedgetnext_event(trid, &r.info, data, sizeof data, &r.data_len,
                                               &r.unavailable, abstime);
        break;
    }
    r.returned_at = Clock::now();
    return r;
}

// Runs fn in a forked child and returns the child's exit code (what the
// function returned), or -1 if the child did not exit normally.
template <class Fn> int in_child(Fn fn)
{
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(fn());
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// What this process has read with read(2) and pread(2) so far (nullopt if
// /proc does not say): a reader that must not read what a hostile file
// only claims is held to it.
inline std::optional<uint64_t> bytes_read_so_far()
{
    std::ifstream io("/proc/self/io");
    std::string key;
    uint64_t value = 0;
    while (io >> key >> value)
        if (key == "rchar:")
            return value;
    return std::nullopt;
}

// A field of /proc/PID/status in kB ("VmRSS", "RssAnon"...), or -1.
inline long status_field_kb(pid_t pid, const char *field)
{
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind(field, 0) == 0 && line.size() > std::strlen(field) + 1)
            return std::stol(line.substr(std::strlen(field) + 1));
    return -1;
}

// The exit code of `child` (minus the signal's number if a signal killed
// it), or nullopt if it was still there after `limit`: it is killed then.
inline std::optional<int> wait_for_child_within(pid_t child, std::chrono::milliseconds limit)
{
    auto deadline = Clock::now() + limit;
    int status = 0;
    pid_t waited;
    while ((waited = waitpid(child, &status, WNOHANG)) == 0 && Clock::now() < deadline)
        usleep(1000);
    if (waited == 0) {
        kill(child, SIGKILL);
        REQUIRE(waitpid(child, &status, 0) == child);
        return std::nullopt;
    }
    REQUIRE(waited == child);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// Runs fn in a forked child, as in_child does, and kills it once `limit` has
// passed: its exit code, or nullopt if it did not exit in time. A test of a
// reader that must not hang fails instead of hanging.
template <class Fn> std::optional<int> in_child_within(std::chrono::milliseconds limit, Fn fn)
{
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(fn());
    return wait_for_child_within(child, limit);
}

// A helper program built next to the test binary (build/tests/helpers/NAME).
inline std::string helper_path(const char *name)
{
    char self[4096] = {};
    REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
    std::string path(self);
    return path.substr(0, path.rfind('/')) + "/helpers/" + name;
}

// A child process running `argv`, talked to line by line on its stdin and
// stdout; killed and reaped when the conversation ends.
class ChildConversation {
public:
    explicit ChildConversation(std::vector<std::string> argv)
    {
        int to_child[2], from_child[2];
        REQUIRE(pipe(to_child) == 0);
        REQUIRE(pipe(from_child) == 0);
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            dup2(to_child[0], 0);
            dup2(from_child[1], 1);
            close(to_child[1]);
            close(from_child[0]);
            std::vector<char *> args;
            for (auto &arg : argv)
                args.push_back(arg.data());
            args.push_back(nullptr);
            execv(args[0], args.data());
            _exit(127);
        }
        close(to_child[0]);
        close(from_child[1]);
        to_child_ = to_child[1];
        from_child_ = fdopen(from_child[0], "r");
    }
    ChildConversation(const ChildConversation &) = delete;
    ChildConversation &operator=(const ChildConversation &) = delete;
    ~ChildConversation()
    {
        close(to_child_);
        fclose(from_child_);
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    pid_t pid() const { return pid_; }
    std::string read_line()
    {
        char line[256] = {};
        return fgets(line, sizeof line, from_child_) ? line : "";
    }
    void say(const char *line) { REQUIRE(write(to_child_, line, std::strlen(line)) > 0); }

private:
    pid_t pid_ = -1;
    int to_child_ = -1;
    FILE *from_child_ = nullptr;
};

// A repeat_emitter child (tests/helpers): each round emits repeat.event
// and fires its USDT probe repeat:fire once.
class RepeatEmitter {
public:
    RepeatEmitter() : child_({helper_path("repeat_emitter")})
    {
        REQUIRE(child_.read_line() == "ready\n");
    }
    pid_t pid() const { return child_.pid(); }
    void round()
    {
        child_.say("go\n");
        REQUIRE(child_.read_line() == "done\n");
    }

private:
    ChildConversation child_;
};

} // namespace test_support
