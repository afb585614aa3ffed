// A signal handler may exec (POSIX lists execve as async-signal-safe), even
// when the thread it interrupted holds a stream's lock: the library's exec
// wrapper must not wait for that lock. getnext copies an event out under the
// stream's lock, so a destination that faults runs the SIGSEGV handler with
// the lock held, every time.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "log_support.hpp"
#include "test_support.hpp"
#include "util/unique_fd.hpp"

using namespace test_support;

namespace {

constexpr int kExeced = 42; // what the program the handler execs exits with
constexpr int kExecFailed = 3;

void exec_shell(int)
{
    char shell[] = "/bin/sh", dash_c[] = "-c", script[] = "exit 42";
    char *argv[] = {shell, dash_c, script, nullptr};
    char *envp[] = {nullptr};
    execve(shell, argv, envp);
    _exit(kExecFailed);
}

// In a child: a stream of the child (with a log written to `log_fd` if it is
// >= 0), started, said on `set_up`; its start event read into memory that is
// not mapped. The SIGSEGV handler execs. Any return is a failure.
int read_into_unmapped_memory(int log_fd, int set_up)
{
    struct sigaction action {};
    action.sa_handler = exec_shell;
    if (sigaction(SIGSEGV, &action, nullptr) != 0)
        return 10;
    trace_id_t trid = 0;
    int created = log_fd >= 0 ? posix_trace_create_withlog(0, nullptr, log_fd, &trid)
                              : posix_trace_create(0, nullptr, &trid);
    if (created != 0 || posix_trace_start(trid) != 0)
        return 11;
    void *unmapped = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (unmapped == MAP_FAILED)
        return 12;
    if (write(set_up, "s", 1) != 1)
        return 14;
    char data[64];
    size_t length = 0;
    int unavailable = 0;
    posix_trace_getnext_event(trid, static_cast<posix_trace_event_info *>(unmapped), data,
                              sizeof data, &length, &unavailable);
    return 13;
}

constexpr int kStillThere = 1000;

// What the child exited with (minus a signal that killed it), or kStillThere
// if it was still there 10 s after its stream was set up. From there it takes milliseconds; a
// wrapper waiting for the lock waits for ever. Setting the stream up is not what is timed: in a
// child of this process, whose probes of ended streams the kernel may still
// be detaching, attaching takes its turn behind them, seconds on a busy host.
int run_in_child(int log_fd)
{
    int set_up_pipe[2];
    REQUIRE(pipe2(set_up_pipe, O_CLOEXEC) == 0);
    posixtrace::UniqueFd set_up(set_up_pipe[0]), said_set_up(set_up_pipe[1]);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(read_into_unmapped_memory(log_fd, said_set_up.get()));
    said_set_up.reset();
    pollfd waiting{set_up.get(), POLLIN, 0};
    REQUIRE(poll(&waiting, 1, 120'000) == 1); // set up, or failed and gone
    return wait_for_child_within(child, std::chrono::seconds(10)).value_or(kStillThere);
}

} // namespace

TEST_CASE("exec: a signal handler execs while its thread holds the stream's lock",
          "[exec][signal][self-tracing]")
{
    SECTION("a stream without a log")
    {
        CHECK(run_in_child(-1) == kExeced);
    }
    SECTION("a stream with a log, which the exec cannot write out")
    {
        TempFile file;
        CHECK(run_in_child(file.fd()) == kExeced);
    }
}

namespace {

// The signals blocked in each of this process's threads named one of `names`.
std::vector<uint64_t> blocked_in_threads_named(const std::vector<std::string> &names)
{
    std::vector<uint64_t> masks;
    for (const auto &task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        if (!std::getline(comm, name) || std::find(names.begin(), names.end(), name) == names.end())
            continue;
        std::ifstream status(task.path() / "status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("SigBlk:", 0) == 0)
                masks.push_back(std::stoull(line.substr(7), nullptr, 16));
    }
    return masks;
}

} // namespace

// A process-directed signal goes to any thread that does not block it: on
// the drain or the log writer, a handler that execs would wait for that very
// thread to flush the log.
TEST_CASE("exec: the library's own threads take no signal of the application's",
          "[exec][signal][self-tracing]")
{
    TempFile file;
    StreamGuard stream = make_logged_stream(file.fd(), nullptr);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    auto masks = blocked_in_threads_named({"posixtrace-drn", "posixtrace-log"});
    REQUIRE(masks.size() >= 2); // the drain and the log writer
    for (uint64_t mask : masks)
        for (int signal : {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM,
                           SIGCHLD, SIGSEGV, SIGRTMIN + 1})
            CHECK((mask >> (signal - 1) & 1) == 1);
}
