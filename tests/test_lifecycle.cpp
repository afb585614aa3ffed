// Processes come and go: inheritance across fork (on and off), probes of a
// new image after exec and of a library loaded with dlopen, and the end of a
// traced process. Real processes, real BPF.
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <posix_trace/usdt.h>
#include <signal.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace test_support;

namespace {

std::string helper(const char *name)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    REQUIRE(n > 0);
    std::string self(path, size_t(n)); // .../build[-asan]/tests/posixtrace-tests
    return self.substr(0, self.rfind('/')) + "/helpers/" + name;
}

StreamGuard stream_for(pid_t pid, int inheritance)
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    REQUIRE(posix_trace_attr_setinherited(&attr, inheritance) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 4u << 20) == 0);
    trace_id_t trid = 0;
    int err = posix_trace_create(pid, &attr, &trid);
    posix_trace_attr_destroy(&attr);
    INFO("posix_trace_create: " << std::strerror(err));
    REQUIRE(err == 0);
    return StreamGuard(trid);
}

std::optional<trace_event_id_t> type_named(trace_id_t trid, const std::string &wanted)
{
    REQUIRE(posix_trace_eventtypelist_rewind(trid) == 0);
    for (;;) {
        trace_event_id_t id = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
        if (unavailable)
            return std::nullopt;
        char name[TRACE_EVENT_NAME_MAX];
        if (posix_trace_eventid_get_name(trid, id, name) == 0 && wanted == name)
            return id;
    }
}

// Probes of a new object are attached by the stream once it has read the
// event that announced it; waits for that (the delay is documented).
trace_event_id_t wait_for_type(trace_id_t trid, const std::string &name)
{
    auto deadline = Clock::now() + 3s;
    while (Clock::now() < deadline) {
        if (auto id = type_named(trid, name))
            return *id;
        std::this_thread::sleep_for(1ms);
    }
    FAIL("event type " << name << " never appeared");
    return 0;
}

// Reads everything until an event satisfies `last` (or 3 s have passed).
template <class Predicate> std::vector<Event> read_until(trace_id_t trid, Predicate last)
{
    std::vector<Event> events;
    auto deadline = Clock::now() + 3s;
    while (Clock::now() < deadline) {
        for (auto &event : read_available(trid)) {
            events.push_back(std::move(event));
            if (last(events.back()))
                return events;
        }
        std::this_thread::sleep_for(2ms);
    }
    FAIL_CHECK("the awaited event never came");
    return events;
}

bool is_exit(const Event &e) { return e.info.posix_event_id == POSIX_TRACE_PROCESS_EXIT; }

std::vector<Event> read_until_exit_of(trace_id_t trid, pid_t pid)
{
    return read_until(trid, [pid](const Event &e) { return is_exit(e) && e.info.posix_pid == pid; });
}

// Until the first child `parent` forked has ended (a sanitizer's own helper
// processes, forked at exit, may end first).
std::vector<Event> read_until_child_exit(trace_id_t trid, pid_t parent)
{
    pid_t child = 0;
    return read_until(trid, [parent, &child](const Event &e) {
        if (!child && e.info.posix_event_id == POSIX_TRACE_PROCESS_FORK && e.info.posix_pid == parent) {
            posix_trace_process_fork_data fork;
            std::memcpy(&fork, e.data.data(), sizeof fork);
            child = fork.child_pid;
        }
        return child && is_exit(e) && e.info.posix_pid == child;
    });
}

template <class T> T payload(const Event &event)
{
    T value{};
    REQUIRE(event.data.size() >= sizeof value);
    std::memcpy(&value, event.data.data(), sizeof value);
    return value;
}

size_t count_of(const std::vector<Event> &events, trace_event_id_t id, pid_t pid)
{
    size_t n = 0;
    for (const auto &e : events)
        n += e.info.posix_event_id == id && e.info.posix_pid == pid;
    return n;
}

const Event *find_event(const std::vector<Event> &events, trace_event_id_t id)
{
    for (const auto &e : events)
        if (e.info.posix_event_id == id)
            return &e;
    return nullptr;
}

pid_t child_from_fork_event(const std::vector<Event> &events, pid_t parent, uint32_t inherited)
{
    const Event *fork = find_event(events, POSIX_TRACE_PROCESS_FORK);
    REQUIRE(fork != nullptr);
    auto data = payload<posix_trace_process_fork_data>(*fork);
    CHECK(fork->info.posix_pid == parent);
    CHECK(data.parent_pid == parent);
    CHECK(data.inherited == inherited);
    CHECK(data.child_pid > 0);
    CHECK(data.child_pid != parent);
    return data.child_pid;
}

} // namespace

TEST_CASE("inheritance: a child forked after start is traced from its first instruction",
          "[lifecycle]")
{
    ChildConversation spawner({helper("spawner"), "fork", "100"});
    REQUIRE(spawner.read_line() == "ready\n");
    StreamGuard stream = stream_for(spawner.pid(), POSIX_TRACE_INHERITED);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(stream.get(), "spawner:*", &attached) == 0);
    trace_event_id_t child_probe = *type_named(stream.get(), "spawner:child");
    REQUIRE(posix_trace_start(stream.get()) == 0);

    spawner.say("go\n");
    REQUIRE(spawner.read_line() == "child exited 0\n");
    // The child's exit is the last thing it records; the stream learned of
    // the child at its fork, in the kernel.
    auto events = read_until_child_exit(stream.get(), spawner.pid());
    pid_t child = child_from_fork_event(events, spawner.pid(), 1);
    CHECK(count_of(events, child_probe, child) == 100);
    CHECK(count_of(events, child_probe, spawner.pid()) == 0);
    CHECK(count_of(events, POSIX_TRACE_PROCESS_EXIT, child) == 1);

    // In order: fork, the child's 100 events, its exit.
    std::vector<trace_event_id_t> child_story;
    for (const auto &e : events)
        if (e.info.posix_pid == child || e.info.posix_event_id == POSIX_TRACE_PROCESS_FORK)
            child_story.push_back(e.info.posix_event_id);
    REQUIRE(child_story.size() == 102);
    CHECK(child_story.front() == POSIX_TRACE_PROCESS_FORK);
    CHECK(child_story.back() == POSIX_TRACE_PROCESS_EXIT);
    const Event &exit = events.back(); // read until the child's exit
    REQUIRE(exit.info.posix_event_id == POSIX_TRACE_PROCESS_EXIT);
    auto status = payload<posix_trace_process_exit_data>(exit);
    CHECK(status.pid == child);
    CHECK(WIFEXITED(status.wait_status));
    CHECK(WEXITSTATUS(status.wait_status) == 0);
}

TEST_CASE("inheritance: POSIX_TRACE_CLOSE_FOR_CHILD leaves children untraced", "[lifecycle]")
{
    ChildConversation spawner({helper("spawner"), "fork", "100"});
    REQUIRE(spawner.read_line() == "ready\n");
    StreamGuard stream = stream_for(spawner.pid(), POSIX_TRACE_CLOSE_FOR_CHILD);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(stream.get(), "spawner:*", &attached) == 0);
    trace_event_id_t child_probe = *type_named(stream.get(), "spawner:child");
    REQUIRE(posix_trace_start(stream.get()) == 0);

    spawner.say("go\n");
    REQUIRE(spawner.read_line() == "child exited 0\n");
    spawner.say("bye\n");
    auto events = read_until_exit_of(stream.get(), spawner.pid());
    pid_t child = child_from_fork_event(events, spawner.pid(), 0);
    CHECK(count_of(events, child_probe, child) == 0);
    CHECK(count_of(events, POSIX_TRACE_PROCESS_EXIT, child) == 0);
    CHECK(count_of(events, POSIX_TRACE_PROCESS_EXIT, spawner.pid()) == 1);
}

TEST_CASE("exec: a traced child stays traced and its new image's probes are attached",
          "[lifecycle]")
{
    ChildConversation spawner({helper("spawner"), "exec", helper("own_probes")});
    REQUIRE(spawner.read_line() == "ready\n");
    StreamGuard stream = stream_for(spawner.pid(), POSIX_TRACE_INHERITED);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(stream.get(), "*", &attached) == 0);
    REQUIRE(posix_trace_start(stream.get()) == 0);

    spawner.say("go\n");
    REQUIRE(spawner.read_line() == "ready\n"); // own_probes, exec'd by the child
    auto exec_seen = Clock::now();
    trace_event_id_t plain = wait_for_type(stream.get(), "ownapp:plain");
    trace_event_id_t guarded = wait_for_type(stream.get(), "ownapp:guarded");
    INFO("probes of the new image attached " << ms_between(exec_seen, Clock::now())
                                             << " ms after it said ready");
    spawner.say("go\n");
    REQUIRE(spawner.read_line() == "fired 500\n"); // the semaphore was raised
    spawner.say("bye\n");
    REQUIRE(spawner.read_line() == "child exited 0\n");

    auto events = read_until_child_exit(stream.get(), spawner.pid());
    pid_t child = child_from_fork_event(events, spawner.pid(), 1);
    CHECK(count_of(events, plain, child) == 500);
    CHECK(count_of(events, guarded, child) == 500);
    const Event *exec = find_event(events, POSIX_TRACE_PROCESS_EXEC);
    REQUIRE(exec != nullptr);
    CHECK(exec->info.posix_pid == child);
    auto exec_data = payload<posix_trace_process_exec_data>(*exec);
    CHECK(exec_data.pid == child);
    std::string path(reinterpret_cast<const char *>(exec->data.data()) + sizeof exec_data);
    CHECK(path == helper("own_probes"));
    CHECK(count_of(events, POSIX_TRACE_PROCESS_EXIT, child) == 1);
}

TEST_CASE("dlopen: probes of a library loaded while tracing are attached", "[lifecycle]")
{
    ChildConversation target({helper("own_probes"), "dlopen", helper("libownlib.so"), "200"});
    REQUIRE(target.read_line() == "ready\n");
    StreamGuard stream = stream_for(target.pid(), POSIX_TRACE_CLOSE_FOR_CHILD);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(stream.get(), "*", &attached) == 0);
    CHECK_FALSE(type_named(stream.get(), "ownlib:fire")); // not loaded yet
    REQUIRE(posix_trace_start(stream.get()) == 0);

    target.say("go\n");
    REQUIRE(target.read_line() == "loaded\n");
    auto loaded = Clock::now();
    trace_event_id_t fire = wait_for_type(stream.get(), "ownlib:fire");
    INFO("library probes attached " << ms_between(loaded, Clock::now()) << " ms after dlopen");
    target.say("go\n");
    REQUIRE(target.read_line() == "fired\n");
    target.say("bye\n");
    auto events = read_until_exit_of(stream.get(), target.pid());
    CHECK(count_of(events, fire, target.pid()) == 200);
}

TEST_CASE("exit: the stream stays readable, the exit comes last with its status", "[lifecycle]")
{
    ChildConversation emitter({helper("user_event_emitter")});
    REQUIRE(emitter.read_line() == "ready\n");
    StreamGuard stream = stream_for(emitter.pid(), POSIX_TRACE_CLOSE_FOR_CHILD);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    emitter.say("go\n");
    REQUIRE(emitter.read_line() == "done\n");
    REQUIRE(kill(emitter.pid(), SIGKILL) == 0);

    auto events = read_until_exit_of(stream.get(), emitter.pid());
    REQUIRE(events.size() >= 4); // start, two user events, exit
    CHECK(events.front().info.posix_event_id == POSIX_TRACE_START);
    CHECK(events[1].info.posix_event_id >= POSIX_TRACE_USER_EVENT_FIRST);
    CHECK(events[2].info.posix_event_id >= POSIX_TRACE_USER_EVENT_FIRST);
    const Event &exit = events.back();
    auto status = payload<posix_trace_process_exit_data>(exit);
    CHECK(status.pid == emitter.pid());
    CHECK(WIFSIGNALED(status.wait_status));
    CHECK(WTERMSIG(status.wait_status) == SIGKILL);

    // Still a stream: status, and reads that find nothing more.
    posix_trace_status_info st{};
    CHECK(posix_trace_get_status(stream.get(), &st) == 0);
    CHECK(st.posix_stream_status == POSIX_TRACE_RUNNING);
    ReadResult more = get_next(stream.get(), GetNext::Try);
    CHECK(more.err == 0);
    CHECK(more.unavailable == 1);
    CHECK(posix_trace_stop(stream.get()) == 0);
}

TEST_CASE("threads: threads the target creates while traced are traced", "[lifecycle]")
{
    ChildConversation python({"/usr/bin/python3.11", "-c",
                              "import sys, threading\n"
                              "print('ready', flush=True)\n"
                              "sys.stdin.readline()\n"
                              "def work():\n"
                              "    for i in range(250): sys.audit('posixtrace.thread', i)\n"
                              "ts = [threading.Thread(target=work) for _ in range(4)]\n"
                              "[t.start() for t in ts]\n"
                              "[t.join() for t in ts]\n"
                              "print('done', flush=True)\n"
                              "sys.stdin.readline()\n"});
    REQUIRE(python.read_line() == "ready\n");
    StreamGuard stream = stream_for(python.pid(), POSIX_TRACE_CLOSE_FOR_CHILD);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(stream.get(), "python:audit", &attached) == 0);
    REQUIRE(posix_trace_usdt_decode_string(stream.get(), "python:audit", 0) == 0);
    trace_event_id_t audit = *type_named(stream.get(), "python:audit");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    python.say("go\n");
    REQUIRE(python.read_line() == "done\n");
    python.say("bye\n");

    auto events = read_until_exit_of(stream.get(), python.pid());
    std::map<pid_t, size_t> per_thread;
    for (const auto &e : events) {
        if (e.info.posix_event_id != audit)
            continue;
        // [2 arguments][string NUL][argument count]
        std::string name(reinterpret_cast<const char *>(e.data.data()) + 16);
        if (name == "posixtrace.thread")
            ++per_thread[e.info.posix_tid];
    }
    CHECK(per_thread.size() == 4);
    for (const auto &[tid, count] : per_thread) {
        CHECK(tid != python.pid());
        CHECK(count == 250);
    }
}

TEST_CASE("td TD_DBERR: the kernel refuses an agent when its process table is full", "[lifecycle]")
{
    // The table of processes with an agent holds 4,096 a stream; shrunk to
    // one here, the agent for an inherited child cannot be registered.
    setenv("POSIXTRACE_TD_MAX_PROCESSES", "1", 1);
    ChildConversation spawner({helper("spawner"), "exec", helper("own_probes")});
    REQUIRE(spawner.read_line() == "ready\n");
    StreamGuard stream = stream_for(spawner.pid(), POSIX_TRACE_INHERITED);
    unsetenv("POSIXTRACE_TD_MAX_PROCESSES");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    spawner.say("go\n");
    REQUIRE(spawner.read_line() == "ready\n"); // the child, traced by inheritance
    std::ifstream children("/proc/" + std::to_string(spawner.pid()) + "/task/" +
                           std::to_string(spawner.pid()) + "/children");
    pid_t child = 0;
    REQUIRE(children >> child);

    td_thragent_t *parent_agent = nullptr, *child_agent = nullptr;
    REQUIRE(td_ta_new_from_stream(stream.get(), spawner.pid(), &parent_agent) == TD_OK);
    CHECK(td_ta_new_from_stream(stream.get(), child, &child_agent) == TD_DBERR);
    CHECK(child_agent == nullptr);
    REQUIRE(td_ta_delete(parent_agent) == TD_OK); // its entry freed: now there is room
    REQUIRE(td_ta_new_from_stream(stream.get(), child, &child_agent) == TD_OK);
    CHECK(td_ta_delete(child_agent) == TD_OK);

    spawner.say("go\n");
    REQUIRE(spawner.read_line().rfind("fired ", 0) == 0); // no probe attached: its count does not matter
    spawner.say("bye\n");
    REQUIRE(spawner.read_line() == "child exited 0\n");
}
