#include "target.hpp"

#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/pid_namespace.hpp"

namespace posixtrace::cli {
namespace {

volatile sig_atomic_t stop_signal_seen = 0;

std::string create_error(int err, pid_t pid)
{
    switch (err) {
    case ESRCH:
        return "no process " + std::to_string(pid);
    case EPERM:
        if (!posixtrace::in_initial_pid_namespace())
            return "cannot trace from a PID namespace other than the host's (its process numbers "
                   "are not the kernel's)";
        return "tracing needs root, or CAP_BPF and CAP_PERFMON";
    case EAGAIN:
        return "too many trace streams on this system (TRACE_SYS_MAX)";
    default:
        return std::string("cannot trace: ") + std::strerror(err);
    }
}

int wait_status_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

void fail(const std::string &message, int status)
{
    std::fprintf(stderr, "posixtrace: %s\n", message.c_str());
    throw CLI::RuntimeError(status);
}

Target Target::running(pid_t pid)
{
    char exe[64];
    std::string link = "/proc/" + std::to_string(pid) + "/exe";
    if (readlink(link.c_str(), exe, sizeof exe) < 0 && errno == ENOENT) {
        if (kill(pid, 0) != 0 && errno == ESRCH)
            fail("no process " + std::to_string(pid));
        fail("process " + std::to_string(pid) +
             " is a kernel thread: it has no user code to trace");
    }
    return Target(pid, false);
}

Target Target::command(const std::vector<std::string> &words)
{
    pid_t child = fork();
    if (child < 0)
        fail(std::string("fork: ") + std::strerror(errno));
    if (child == 0) {
        ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
        std::vector<char *> argv;
        for (const auto &word : words)
            argv.push_back(const_cast<char *>(word.c_str()));
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "posixtrace: cannot run %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status))
        throw CLI::RuntimeError(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
    Target target(child, true);
    target.held_ = true;
    return target;
}

Target::Target(Target &&other) noexcept
    : pid_(other.pid_), own_child_(other.own_child_), held_(other.held_)
{
    other.held_ = false;
}

Target::~Target()
{
    if (held_) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

void Target::release()
{
    if (held_)
        ptrace(PTRACE_DETACH, pid_, nullptr, nullptr);
    held_ = false;
}

bool Target::ended(int &exit_status)
{
    if (own_child_) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) != pid_)
            return false;
        exit_status = wait_status_code(status);
        return true;
    }
    return kill(pid_, 0) != 0 && errno == ESRCH;
}

void Target::collect_status(int &exit_status)
{
    int status = 0;
    if (own_child_ && waitpid(pid_, &status, WNOHANG) == pid_)
        exit_status = wait_status_code(status);
}

StreamOwner::StreamOwner(pid_t pid, const trace_attr_t &attr, int log_fd)
{
    int err = log_fd < 0 ? posix_trace_create(pid, &attr, &trid_)
                         : posix_trace_create_withlog(pid, &attr, log_fd, &trid_);
    if (err == ENOSPC || err == EFBIG)
        fail(std::string("cannot write the trace log: ") + std::strerror(err));
    if (err)
        fail(create_error(err, pid));
}

void catch_stop_signals()
{
    struct sigaction on_signal {};
    on_signal.sa_handler = [](int) { stop_signal_seen = 1; };
    sigaction(SIGINT, &on_signal, nullptr);
    sigaction(SIGTERM, &on_signal, nullptr);
}

void restore_stop_signals()
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
}

bool stop_requested()
{
    return stop_signal_seen != 0;
}

timespec realtime_in(long milliseconds)
{
    timespec when;
    clock_gettime(CLOCK_REALTIME, &when);
    when.tv_sec += milliseconds / 1000;
    when.tv_nsec += (milliseconds % 1000) * 1'000'000;
    if (when.tv_nsec >= 1'000'000'000) {
        when.tv_sec++;
        when.tv_nsec -= 1'000'000'000;
    }
    return when;
}

} // namespace posixtrace::cli
