// thread_db's thread agent on real threads: masks, message buffers, the
// reporting functions, event sets and the td_* error codes.
#include "thread_events_support.hpp"

#include <bpf/bpf.h>
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <signal.h>
#include <trace.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace thread_events_support;

// ---- thread_db's facility -------------------------------------------------------

namespace {

// A stream on the signals workload with an agent from it, and handles for
// its two threads.
struct SignalAgent {
    SignalAgent() : workload({"signals"}), stream(thread_stream(workload.child.pid()))
    {
        REQUIRE(td_ta_new_from_stream(stream.get(), workload.child.pid(), &agent) == TD_OK);
        REQUIRE(td_ta_map_lwp2thr(agent, workload.ready_tid(0), &first) == TD_OK);
        REQUIRE(td_ta_map_lwp2thr(agent, workload.ready_tid(1), &second) == TD_OK);
        REQUIRE(posix_trace_start(stream.get()) == 0);
    }
    ~SignalAgent()
    {
        td_ta_delete(agent);
        workload.child.say("q\n");
    }
    // One round ("a": SIGUSR1 to the first, SIGUSR2 to the second thread;
    // "b": both to the first); the catchsig events recorded, as (tid, signal).
    std::multiset<std::pair<pid_t, uint64_t>> round(const char *which)
    {
        workload.child.say(which);
        REQUIRE(workload.child.read_line().rfind("sent ", 0) == 0);
        REQUIRE(posix_trace_stop(stream.get()) == 0);
        std::multiset<std::pair<pid_t, uint64_t>> delivered;
        for (const auto &e : thread_events(stream.get()))
            if (e.event == TD_CATCHSIG)
                delivered.insert({e.data.tid, e.data.value});
        REQUIRE(posix_trace_start(stream.get()) == 0);
        return delivered;
    }
    pid_t tid(int i) const { return workload.ready_tid(size_t(i)); }

    Workload workload;
    StreamGuard stream;
    td_thragent_t *agent = nullptr;
    td_thrhandle_t first{}, second{};
};

td_thr_events_t only(td_event_e event)
{
    td_thr_events_t set;
    td_event_emptyset(&set);
    td_event_addset(&set, event);
    return set;
}

using Delivered = std::multiset<std::pair<pid_t, uint64_t>>;

} // namespace

TEST_CASE("td masks: reported iff enabled and in the thread's mask or the global mask",
          "[thread_events][self-tracing]")
{
    SignalAgent s;
    td_thr_events_t catchsig = only(TD_CATCHSIG);

    // Threads start disabled: nothing, whatever the masks.
    REQUIRE(td_thr_set_event(&s.first, &catchsig) == TD_OK);
    CHECK(s.round("a\n").empty());

    // Enabled, in its own mask: the first thread's only.
    REQUIRE(td_thr_event_enable(&s.first, 1) == TD_OK);
    CHECK(s.round("a\n") == Delivered{{s.tid(0), SIGUSR1}});

    // The second enabled with an empty mask: still nothing of it...
    REQUIRE(td_thr_event_enable(&s.second, 1) == TD_OK);
    CHECK(s.round("a\n") == Delivered{{s.tid(0), SIGUSR1}});
    // ... until the global mask has the type.
    REQUIRE(td_ta_set_event(s.agent, &catchsig) == TD_OK);
    CHECK(s.round("a\n") == Delivered{{s.tid(0), SIGUSR1}, {s.tid(1), SIGUSR2}});

    // The global mask does not override a disabled thread.
    REQUIRE(td_thr_event_enable(&s.first, 0) == TD_OK);
    CHECK(s.round("a\n") == Delivered{{s.tid(1), SIGUSR2}});

    // Cleared from the global mask and the thread mask: nothing.
    REQUIRE(td_thr_event_enable(&s.first, 1) == TD_OK);
    REQUIRE(td_ta_clear_event(s.agent, &catchsig) == TD_OK);
    REQUIRE(td_thr_clear_event(&s.first, &catchsig) == TD_OK);
    CHECK(s.round("a\n").empty());

    // Released: every thread reports again (the stream's filter decides).
    REQUIRE(td_ta_delete(s.agent) == TD_OK);
    s.agent = nullptr;
    CHECK(s.round("a\n") == Delivered{{s.tid(0), SIGUSR1}, {s.tid(1), SIGUSR2}});
}

TEST_CASE("td getmsg: one slot per thread, the latest overwrites, reading consumes",
          "[thread_events][self-tracing]")
{
    SignalAgent s;
    td_thr_events_t catchsig = only(TD_CATCHSIG);
    REQUIRE(td_thr_set_event(&s.first, &catchsig) == TD_OK);
    REQUIRE(td_thr_set_event(&s.second, &catchsig) == TD_OK);
    REQUIRE(td_thr_event_enable(&s.first, 1) == TD_OK);
    REQUIRE(td_thr_event_enable(&s.second, 1) == TD_OK);

    td_event_msg_t msg{};
    CHECK(td_thr_event_getmsg(&s.first, &msg) == TD_NOMSG);
    s.round("b\n"); // SIGUSR1 then SIGUSR2, both to the first thread
    REQUIRE(td_thr_event_getmsg(&s.first, &msg) == TD_OK);
    CHECK(msg.event == TD_CATCHSIG);
    CHECK(msg.msg.data == SIGUSR2); // the second overwrote the first
    REQUIRE(msg.th_p != nullptr);
    CHECK(msg.th_p->th_unique == uintptr_t(s.tid(0)));
    CHECK(msg.th_p->th_ta_p == s.agent);
    CHECK(td_thr_event_getmsg(&s.first, &msg) == TD_NOMSG); // consumed
    CHECK(td_thr_event_getmsg(&s.second, &msg) == TD_NOMSG);

    s.round("a\n");
    std::set<std::pair<uintptr_t, uintptr_t>> taken;
    for (int i = 0; i < 2; ++i) {
        REQUIRE(td_ta_event_getmsg(s.agent, &msg) == TD_OK);
        taken.insert({msg.th_p->th_unique, msg.msg.data});
    }
    CHECK(taken == std::set<std::pair<uintptr_t, uintptr_t>>{{uintptr_t(s.tid(0)), SIGUSR1},
                                                             {uintptr_t(s.tid(1)), SIGUSR2}});
    CHECK(td_ta_event_getmsg(s.agent, &msg) == TD_NOMSG);
}

TEST_CASE("td_ta_event_addr: one exported reporting function per event type",
          "[thread_events][self-tracing]")
{
    SignalAgent s;
    std::set<uintptr_t> addresses;
    const char *names[] = {"ready",       "sleep", "switchto",    "switchfrom", "lock_try",
                           "catchsig",    "idle",  "create",      "death",      "preempt",
                           "pri_inherit", "reap",  "concurrency", "timeout"};
    for (int event = TD_MIN_EVENT_NUM; event <= TD_MAX_EVENT_NUM; ++event) {
        td_notify_t notify{};
        REQUIRE(td_ta_event_addr(s.agent, td_event_e(event), &notify) == TD_OK);
        CHECK(notify.type == NOTIFY_BPT);
        addresses.insert(notify.u.bptaddr);
        std::string symbol = std::string("posix_trace_td_report_") + names[event - 1];
        CHECK(reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, symbol.c_str())) == notify.u.bptaddr);
    }
    CHECK(addresses.size() == TD_MAX_EVENT_NUM);
}

TEST_CASE("td event set macros", "[thread_events][self-tracing]")
{
    td_thr_events_t set;
    td_event_fillset(&set);
    CHECK_FALSE(td_eventisempty(&set));
    for (int e = TD_MIN_EVENT_NUM; e <= TD_MAX_EVENT_NUM; ++e)
        CHECK(td_eventismember(&set, e));
    td_event_emptyset(&set);
    CHECK(td_eventisempty(&set));
    td_event_addset(&set, TD_CREATE);
    td_event_addset(&set, TD_TIMEOUT);
    CHECK(td_eventismember(&set, TD_CREATE));
    CHECK(td_eventismember(&set, TD_TIMEOUT));
    CHECK_FALSE(td_eventismember(&set, TD_DEATH));
    td_event_delset(&set, TD_CREATE);
    CHECK_FALSE(td_eventismember(&set, TD_CREATE));
    td_event_delset(&set, TD_TIMEOUT);
    CHECK(td_eventisempty(&set));
}

TEST_CASE("td error codes", "[thread_events][self-tracing]")
{
    SignalAgent s;
    td_thr_events_t events = only(TD_CATCHSIG);
    td_event_msg_t msg{};
    td_notify_t notify{};

    // TD_BADTA: no agent, or one that is not (or no longer) live.
    CHECK(td_ta_event_addr(nullptr, TD_CREATE, &notify) == TD_BADTA);
    CHECK(td_ta_set_event(nullptr, &events) == TD_BADTA);
    CHECK(td_ta_clear_event(nullptr, &events) == TD_BADTA);
    CHECK(td_ta_event_getmsg(nullptr, &msg) == TD_BADTA);
    int not_an_agent = 0;
    CHECK(td_ta_set_event(reinterpret_cast<td_thragent_t *>(&not_an_agent), &events) == TD_BADTA);

    // TD_BADTH: no handle, a handle of no live agent, a thread not in the process.
    CHECK(td_thr_event_enable(nullptr, 1) == TD_BADTH);
    CHECK(td_thr_set_event(nullptr, &events) == TD_BADTH);
    CHECK(td_thr_clear_event(nullptr, &events) == TD_BADTH);
    CHECK(td_thr_event_getmsg(nullptr, &msg) == TD_BADTH);
    td_thrhandle_t stranger{s.agent, uintptr_t(getpid())}; // not a thread of the workload
    CHECK(td_thr_event_enable(&stranger, 1) == TD_BADTH);
    CHECK(td_thr_set_event(&stranger, &events) == TD_BADTH);

    // TD_ERR: bad parameters.
    CHECK(td_ta_event_addr(s.agent, TD_CREATE, nullptr) == TD_ERR);
    CHECK(td_ta_event_addr(s.agent, TD_ALL_EVENTS, &notify) == TD_ERR);
    CHECK(td_ta_event_addr(s.agent, td_event_e(15), &notify) == TD_ERR);
    CHECK(td_thr_set_event(&s.first, nullptr) == TD_ERR);
    CHECK(td_thr_clear_event(&s.first, nullptr) == TD_ERR);
    CHECK(td_ta_set_event(s.agent, nullptr) == TD_ERR);
    CHECK(td_thr_event_getmsg(&s.first, nullptr) == TD_ERR);
    CHECK(td_ta_event_getmsg(s.agent, nullptr) == TD_ERR);
    CHECK(td_ta_new_from_stream(s.stream.get(), s.workload.child.pid(), nullptr) == TD_ERR);
    td_thrhandle_t handle{};
    CHECK(td_ta_map_lwp2thr(s.agent, s.tid(0), nullptr) == TD_ERR);
    CHECK(td_ta_map_lwp2thr(s.agent, getpid(), &handle) == TD_NOLWP);

    // TD_NOMSG.
    CHECK(td_thr_event_getmsg(&s.first, &msg) == TD_NOMSG);
    CHECK(td_ta_event_getmsg(s.agent, &msg) == TD_NOMSG);

    // TD_BADPH: not a stream, a process the stream does not trace, a
    // stream that was shut down.
    td_thragent_t *other = nullptr;
    CHECK(td_ta_new_from_stream(987654, s.workload.child.pid(), &other) == TD_BADPH);
    CHECK(td_ta_new_from_stream(s.stream.get(), getpid(), &other) == TD_BADPH);
    CHECK(td_ta_new_pid(999999, &other) == TD_BADPH);
    REQUIRE(posix_trace_shutdown(s.stream.get()) == 0);
    CHECK(td_ta_set_event(s.agent, &events) == TD_BADPH);
    CHECK(td_thr_event_enable(&s.first, 1) == TD_BADPH);
    CHECK(td_ta_event_getmsg(s.agent, &msg) == TD_BADPH);

    // A released agent, and its handles.
    REQUIRE(td_ta_delete(s.agent) == TD_OK);
    CHECK(td_ta_delete(s.agent) == TD_BADTA);
    CHECK(td_ta_set_event(s.agent, &events) == TD_BADTA);
    CHECK(td_thr_event_enable(&s.first, 1) == TD_BADTH);
    s.agent = nullptr;
}

TEST_CASE("td_ta_new_pid: an agent with a stream of its own fills the message buffers",
          "[thread_events][self-tracing]")
{
    Workload workload({"signals"});
    td_thragent_t *agent = nullptr;
    REQUIRE(td_ta_new_pid(workload.child.pid(), &agent) == TD_OK);
    td_thrhandle_t first{};
    REQUIRE(td_ta_map_lwp2thr(agent, workload.ready_tid(0), &first) == TD_OK);
    td_thr_events_t catchsig = only(TD_CATCHSIG);
    REQUIRE(td_ta_set_event(agent, &catchsig) == TD_OK);
    REQUIRE(td_thr_event_enable(&first, 1) == TD_OK);
    workload.child.say("a\n");
    REQUIRE(workload.child.read_line().rfind("sent ", 0) == 0);
    td_event_msg_t msg{};
    REQUIRE(td_thr_event_getmsg(&first, &msg) == TD_OK);
    CHECK(msg.event == TD_CATCHSIG);
    CHECK(msg.msg.data == SIGUSR1);
    CHECK(td_ta_event_getmsg(agent, &msg) == TD_NOMSG); // the second thread is disabled
    CHECK(td_ta_delete(agent) == TD_OK);
    workload.child.say("q\n");
}

TEST_CASE("td TD_NOCAPAB: the kernel's per-thread table is full", "[thread_events][self-tracing]")
{
    // The table holds 65,536 threads a stream; shrunk to one here.
    ScopedEnvironment small("POSIXTRACE_TD_MAX_THREADS", "1");
    SignalAgent s;
    td_thr_events_t events = only(TD_CATCHSIG);
    REQUIRE(td_thr_event_enable(&s.first, 1) == TD_OK); // the one entry
    CHECK(td_thr_event_enable(&s.second, 1) == TD_NOCAPAB);
    CHECK(td_thr_set_event(&s.second, &events) == TD_NOCAPAB);
    CHECK(td_thr_clear_event(&s.second, &events) == TD_NOCAPAB);
    // The thread that has its entry is unaffected, and so is its reporting.
    CHECK(td_thr_set_event(&s.first, &events) == TD_OK);
    CHECK(s.round("a\n") == Delivered{{s.tid(0), SIGUSR1}});
}
