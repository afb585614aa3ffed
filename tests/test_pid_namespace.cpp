// A tracer in a PID namespace of its own (a container's): the numbers it
// knows processes by are not the kernel's, and the kernel's programs would
// record whichever host process has the number it names. Every stream is
// refused there, by the API and the CLI, before anything is recorded. A
// stream of the host's namespace gives no namespace ids for its events.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <sched.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <string>

#include "cli_support.hpp"
#include "log_support.hpp"
#include "test_support.hpp"

using namespace test_support;

namespace {

// Runs `fn` as the first process of a new PID namespace; its exit code
// (100 and above: the namespace could not be made), or -1.
template <class Fn> int as_first_of_new_pid_namespace(Fn fn)
{
    return in_child([&] {
        if (unshare(CLONE_NEWPID) != 0)
            return 100;
        pid_t first = fork();
        if (first < 0)
            return 101;
        if (first == 0)
            _exit(fn());
        int status = 0;
        if (waitpid(first, &status, 0) != first || !WIFEXITED(status))
            return 102;
        return WEXITSTATUS(status);
    });
}

} // namespace

TEST_CASE("PID namespace of its own: every stream is refused with EPERM, none aimed at the "
          "host's process of that number",
          "[security][hostile][self-tracing]")
{
    TempFile log;
    int result = as_first_of_new_pid_namespace([&log] {
        if (getpid() != 1) // the host's process 1 is another one
            return 1;
        trace_id_t trid;
        if (posix_trace_create(0, nullptr, &trid) != EPERM)
            return 2;
        if (posix_trace_create(getpid(), nullptr, &trid) != EPERM)
            return 3;
        if (posix_trace_create_withlog(0, nullptr, log.fd(), &trid) != EPERM)
            return 4;
        td_thragent_t *agent = nullptr;
        if (td_ta_new_pid(1, &agent) == TD_OK)
            return 5;
        return 0;
    });
    CHECK(result == 0);
    CHECK(lseek(log.fd(), 0, SEEK_END) == 0); // nothing was written to the log
}

TEST_CASE("PID namespace of its own: the CLI says why it cannot record, in one line",
          "[security][cli][self-tracing]")
{
    TempFile log;
    auto run = cli_support::run_shell("unshare --pid --fork " + cli_support::cli_path() +
                                      " record -p 1 --duration 1 -o " + log.path());
    CHECK(run.status != 0);
    CHECK(run.err.find("PID namespace") != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

TEST_CASE("PID namespace: a stream of the host's namespace is created as before",
          "[security][self-tracing]")
{
    trace_id_t trid;
    REQUIRE(posix_trace_create(0, nullptr, &trid) == 0);
    CHECK(posix_trace_shutdown(trid) == 0);
}

TEST_CASE("namespace ids: none for events of the host's namespace, errors for bad arguments",
          "[namespace][self-tracing]")
{
    trace_id_t trid;
    REQUIRE(posix_trace_create(0, nullptr, &trid) == 0);
    posix_trace_namespace_ids ids{-1, -1};
    CHECK(posix_trace_event_namespace_ids(trid, &ids) == ENODATA); // nothing read yet
    CHECK(posix_trace_event_namespace_ids(trid, nullptr) == EINVAL);
    CHECK(posix_trace_event_namespace_ids(trid + 1000, &ids) == EINVAL);
    REQUIRE(posix_trace_start(trid) == 0);
    posix_trace_event(POSIX_TRACE_UNNAMED_USEREVENT, "x", 1);
    REQUIRE(posix_trace_stop(trid) == 0);
    size_t user_events = 0, events = 0;
    for (;;) {
        posix_trace_event_info info;
        char data[64];
        size_t len = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_trygetnext_event(trid, &info, data, sizeof data, &len, &unavailable) ==
                0);
        if (unavailable)
            break;
        ++events;
        user_events += info.posix_event_id == POSIX_TRACE_UNNAMED_USEREVENT;
        CHECK(posix_trace_event_namespace_ids(trid, &ids) == ENODATA);
    }
    CHECK(events >= 3); // start, the event, stop
    CHECK(user_events == 1);
    CHECK(ids.pid == -1); // left as it was
    REQUIRE(posix_trace_shutdown(trid) == 0);
    CHECK(posix_trace_event_namespace_ids(trid, &ids) == EINVAL);
}
