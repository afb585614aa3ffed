#pragma once
// What the record and threads commands share: the process they trace (a
// running one, or a command they start stopped at its first instruction),
// the stream they own, one-line failures and the stop signals.
#include <CLI/CLI.hpp>
#include <sys/types.h>
#include <trace.h>

#include <csignal>
#include <ctime>
#include <string>
#include <vector>

namespace posixtrace::cli {

// Prints "posixtrace: MESSAGE" and ends the command with `status`.
[[noreturn]] void fail(const std::string &message, int status = 1);

// The traced process. A command is started stopped at its exec (ptrace), so
// tracing can begin before its first instruction; release() lets it run.
// A command that never got released is killed with the object.
class Target {
public:
    static Target running(pid_t pid);                             // fails for kernel threads
    static Target command(const std::vector<std::string> &words); // fails if it cannot run
    Target(Target &&other) noexcept;
    Target &operator=(Target &&) = delete;
    ~Target();

    pid_t pid() const { return pid_; }
    bool own_child() const { return own_child_; }
    void release();
    // True once the process is gone; `exit_status` gets a command's status.
    bool ended(int &exit_status);
    // A command still running when tracing stopped: its status if it has ended.
    void collect_status(int &exit_status);

private:
    Target(pid_t pid, bool own_child) : pid_(pid), own_child_(own_child) {}
    pid_t pid_;
    bool own_child_;
    bool held_ = false; // stopped at its exec, waiting for release()
};

// Owns a trace stream: shut down with the object.
class StreamOwner {
public:
    // Creates a stream for `pid`, failing with a one-line message; with a
    // log written to `log_fd` when that is not -1.
    StreamOwner(pid_t pid, const trace_attr_t &attr, int log_fd = -1);
    StreamOwner(const StreamOwner &) = delete;
    StreamOwner &operator=(const StreamOwner &) = delete;
    ~StreamOwner() { posix_trace_shutdown(trid_); } // EINVAL once shut down: harmless
    trace_id_t get() const { return trid_; }

private:
    trace_id_t trid_;
};

// SIGINT and SIGTERM set the flag; the commands stop cleanly on it.
void catch_stop_signals();
// SIGINT and SIGTERM end the process again.
void restore_stop_signals();
bool stop_requested();

// CLOCK_REALTIME, `milliseconds` from now (for the timed getnext call).
timespec realtime_in(long milliseconds);

} // namespace posixtrace::cli
