// Thread events (TD_*) of real threads, compared with the kernel's own
// counters; the seed's masks and message buffers; the td_* error codes.
#include "test_support.hpp"

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

using namespace test_support;

namespace {

std::string workload_path()
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    REQUIRE(n > 0);
    std::string self(path, size_t(n));
    return self.substr(0, self.rfind('/')) + "/helpers/thread_workload";
}

// A running stream on `pid` that records the thread events (and the rest).
StreamGuard thread_stream(pid_t pid)
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 16u << 20) == 0);
    trace_id_t trid = 0;
    REQUIRE(posix_trace_create(pid, &attr, &trid) == 0);
    posix_trace_attr_destroy(&attr);
    return StreamGuard(trid);
}

struct TdEvent {
    td_event_e event;
    td_event_data data;
};

// What a stream reported lost: switches the kernel made without firing
// sched_switch, each reported about its thread (some kernels do; 1 lost: a
// switch-in, td_switchto; more: a switch-out, td_switchfrom and td_sleep or
// td_preempt), and anything else.
// What the stream reported lost. The kernel's reports about one thread say
// what it hid of that thread's scheduling: a switch-in (reported just before
// the thread's td_switchfrom, with its wakeup when that was hidden too: 2
// events then), or a switch-out (td_switchfrom, td_sleep or td_preempt, and
// td_idle: 2 or 3 events).
struct Losses {
    uint64_t other = 0;
    std::map<pid_t, long> hidden_in, hidden_out, hidden_ready;
    std::map<pid_t, uint64_t> unplaced; // a report whose thread has no event after it yet

    void place(pid_t tid, bool next_is_switchfrom)
    {
        auto found = unplaced.find(tid);
        if (found == unplaced.end())
            return;
        uint64_t lost = found->second;
        unplaced.erase(found);
        if (next_is_switchfrom) {
            ++hidden_in[tid];
            hidden_ready[tid] += long(lost) - 1;
        } else {
            ++hidden_out[tid];
        }
    }
};

// Every thread event read from a stopped stream, and the losses.
std::vector<TdEvent> thread_events(trace_id_t trid, Losses *losses = nullptr)
{
    std::vector<TdEvent> events;
    Losses ignored;
    if (!losses)
        losses = &ignored;
    for (const auto &e : read_available(trid, false)) {
        if (e.info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data overflow;
            std::memcpy(&overflow, e.data.data(), sizeof overflow);
            if (e.info.posix_tid == 0)
                losses->other += overflow.lost;
            else
                losses->unplaced[e.info.posix_tid] = overflow.lost;
        }
        if (!is_thread_event(e.info.posix_event_id))
            continue;
        losses->place(e.info.posix_tid,
                      e.info.posix_event_id == POSIX_TRACE_TD_EVENT_FIRST + TD_SWITCHFROM - 1);
        REQUIRE(e.data.size() == sizeof(td_event_data));
        TdEvent td{td_event_e(e.info.posix_event_id - POSIX_TRACE_TD_EVENT_FIRST + 1), {}};
        std::memcpy(&td.data, e.data.data(), sizeof td.data);
        CHECK(td.data.tid == e.info.posix_tid);
        events.push_back(td);
    }
    while (!losses->unplaced.empty()) // nothing after it: by its count alone
        losses->place(losses->unplaced.begin()->first, losses->unplaced.begin()->second == 1);
    return events;
}

// "program=N ..." for the programs whose runs the kernel skipped.
std::string skipped_runs(trace_id_t trid)
{
    posix_trace_program_runs runs[32];
    size_t count = 0;
    REQUIRE(posix_trace_get_skipped_runs(trid, runs, 32, &count) == 0);
    std::string text;
    for (size_t i = 0; i < count && i < 32; ++i)
        if (runs[i].skipped)
            text += std::string(runs[i].program) + "=" + std::to_string(runs[i].skipped) + " ";
    return text;
}

size_t count(const std::vector<TdEvent> &events, td_event_e event, pid_t tid)
{
    size_t n = 0;
    for (const auto &e : events)
        n += e.event == event && e.data.tid == tid;
    return n;
}

size_t count_events(const std::vector<TdEvent> &events, td_event_e event)
{
    return size_t(std::count_if(events.begin(), events.end(),
                                [event](const TdEvent &e) { return e.event == event; }));
}

struct SwitchCounts {
    long voluntary = -1;
    long involuntary = -1;
};

SwitchCounts switches_of(pid_t pid, pid_t tid)
{
    std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
                         "/status");
    SwitchCounts counts;
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
            counts.voluntary = std::stol(line.substr(line.find(':') + 1));
        if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
            counts.involuntary = std::stol(line.substr(line.find(':') + 1));
    }
    REQUIRE(counts.voluntary >= 0);
    return counts;
}

std::vector<std::string> words_of(const std::string &line)
{
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;)
        words.push_back(w);
    return words;
}

// The workload program, its "ready ..." words already read.
struct Workload {
    explicit Workload(std::vector<std::string> args)
        : child([&] {
              args.insert(args.begin(), workload_path());
              return args;
          }())
    {
        ready = words_of(child.read_line());
        REQUIRE(!ready.empty());
        REQUIRE(ready[0] == "ready");
    }
    pid_t ready_tid(size_t i) const { return pid_t(std::stol(ready.at(i + 1))); }
    ChildConversation child;
    std::vector<std::string> ready;
};

} // namespace

TEST_CASE("td_sleep counts a thread's voluntary switches; switchto and switchfrom pair up",
          "[thread_events]")
{
    Workload workload({"sleeper", "300"});
    pid_t pid = workload.child.pid(), worker = workload.ready_tid(0);
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    SwitchCounts before = switches_of(pid, worker); // it waits, blocked: no switch meanwhile
    workload.child.say("go\n");
    REQUIRE(workload.child.read_line() == "done\n");
    SwitchCounts after = switches_of(pid, worker); // asleep in pause()
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    Losses lost;
    auto events = thread_events(stream.get(), &lost);
    CHECK(lost.other == 0);
    long slept = long(count(events, TD_SLEEP, worker)), hidden_in = lost.hidden_in[worker],
         hidden_out = lost.hidden_out[worker], hidden_ready = lost.hidden_ready[worker];
    std::string skipped = skipped_runs(stream.get());
    CAPTURE(before.voluntary, after.voluntary, slept, hidden_in, hidden_out, hidden_ready, skipped);
    CHECK(after.voluntary - before.voluntary >= 300);
    CHECK(std::labs(slept + hidden_out - (after.voluntary - before.voluntary)) <= 2);
    long to = long(count(events, TD_SWITCHTO, worker)),
         from = long(count(events, TD_SWITCHFROM, worker));
    CHECK(std::labs((to + hidden_in) - (from + hidden_out)) <= 1);
    CHECK(from == slept + long(count(events, TD_PREEMPT, worker)));
    CHECK(long(count(events, TD_READY, worker)) + hidden_ready >= 300); // woken, or reported
    for (const auto &e : events)
        if (e.data.tid == worker) {
            CHECK(std::string(e.data.name) == "thread_workload");
            CHECK(e.data.pthread_id != 0);
        }
}

// The time each CPU spent idle so far (milliseconds, /proc/stat; the kernel
// counts it from its idle task's own clock, in 10 ms units).
static std::vector<uint64_t> idle_time_per_cpu()
{
    std::vector<uint64_t> idle;
    std::ifstream stat("/proc/stat");
    std::string line;
    while (std::getline(stat, line)) {
        if (line.compare(0, 3, "cpu") != 0 || line.size() < 4 || !std::isdigit(line[3]))
            continue;
        std::istringstream fields(line);
        std::string name;
        uint64_t user, nice, system, idle_ticks;
        fields >> name >> user >> nice >> system >> idle_ticks;
        idle.push_back(idle_ticks * 1000 / uint64_t(sysconf(_SC_CLK_TCK)));
    }
    return idle;
}

TEST_CASE("td_idle: exactly the switches from the thread to the CPU's idle task", "[thread_events]")
{
    Workload workload({"sleeper", "300"});
    pid_t pid = workload.child.pid(), worker = workload.ready_tid(0);
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    std::vector<uint64_t> idle_before = idle_time_per_cpu();
    workload.child.say("go\n");
    REQUIRE(workload.child.read_line() == "done\n");
    std::vector<uint64_t> idle_after = idle_time_per_cpu();
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    auto events = thread_events(stream.get());
    size_t to_idle = 0;
    std::vector<const TdEvent *> idles;
    std::set<uint32_t> worker_cpus;
    for (const auto &e : events) {
        if (e.data.tid != worker)
            continue;
        worker_cpus.insert(e.data.cpu);
        to_idle += e.event == TD_SWITCHFROM && e.data.value2 == 0; // next tid 0: idle
        if (e.event == TD_IDLE)
            idles.push_back(&e);
    }
    // 300 sleeps of 200 us on a 2-CPU machine where the test waits too: the
    // worker's CPU has nothing else to run after many of them, unless other
    // work keeps it busy (a build next to the suite does): then the kernel
    // accounts no idle time to the CPUs the worker ran on, and no switch to
    // idle is right.
    uint64_t idle_ms = 0;
    for (uint32_t cpu : worker_cpus)
        if (cpu < idle_before.size() && cpu < idle_after.size())
            idle_ms += idle_after[cpu] - idle_before[cpu];
    CAPTURE(to_idle, idles.size(), idle_ms, worker_cpus.size());
    if (idle_ms >= 20)
        CHECK(to_idle >= 1);
    CHECK(idles.size() == to_idle);
    for (const TdEvent *idle : idles)
        CHECK(idle->data.value == idle->data.cpu); // value: the CPU going idle
}

TEST_CASE("td_preempt counts involuntary switches of threads competing for one CPU",
          "[thread_events]")
{
    Workload workload({"spinners", "300"});
    pid_t pid = workload.child.pid();
    pid_t spinners[2] = {workload.ready_tid(0), workload.ready_tid(1)};
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    SwitchCounts before[2] = {switches_of(pid, spinners[0]), switches_of(pid, spinners[1])};
    workload.child.say("go\n");
    REQUIRE(workload.child.read_line() == "done\n");
    SwitchCounts after[2] = {switches_of(pid, spinners[0]), switches_of(pid, spinners[1])};
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    auto events = thread_events(stream.get());
    for (int i = 0; i < 2; ++i) {
        long preempted = long(count(events, TD_PREEMPT, spinners[i]));
        long involuntary = after[i].involuntary - before[i].involuntary;
        CAPTURE(i, preempted, involuntary);
        CHECK(involuntary >= 10); // they really competed
        CHECK(std::labs(preempted - involuntary) <= 2);
        CHECK(std::labs(long(count(events, TD_SLEEP, spinners[i])) -
                        (after[i].voluntary - before[i].voluntary)) <= 2);
        for (const auto &e : events)
            if (e.data.tid == spinners[i] && e.event == TD_SWITCHTO)
                CHECK(e.data.cpu == 0); // pinned
    }
}

TEST_CASE("64 threads: td_create, td_death and td_reap for each; td_concurrency tracks Threads:",
          "[thread_events]")
{
    Workload workload({"threads", "64"});
    pid_t pid = workload.child.pid();
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    workload.child.say("go\n");
    auto done = words_of(workload.child.read_line());
    REQUIRE(done.size() == 3);
    int peak = std::stoi(done[1]), settled = std::stoi(done[2]);

    // A task is freed (td_reap) after an RCU grace period, some time after
    // its thread was joined: read while the stream runs until all came.
    std::vector<TdEvent> events;
    auto reaps = [&] { return count_events(events, TD_REAP); };
    for (int tries = 0; tries < 300 && reaps() < 64; ++tries) {
        auto more = thread_events(stream.get());
        events.insert(events.end(), more.begin(), more.end());
        if (reaps() < 64)
            usleep(10000);
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto rest = thread_events(stream.get());
    events.insert(events.end(), rest.begin(), rest.end());
    std::set<pid_t> created, died, reaped;
    std::vector<uint64_t> concurrency;
    for (const auto &e : events) {
        if (e.event == TD_CREATE) {
            CHECK(e.data.tid == pid); // the main thread creates them
            created.insert(pid_t(e.data.value));
            CHECK(e.data.value2 != 0); // the new thread's pthread_t
        }
        if (e.event == TD_DEATH)
            died.insert(e.data.tid);
        if (e.event == TD_REAP)
            reaped.insert(e.data.tid);
        if (e.event == TD_CONCURRENCY)
            concurrency.push_back(e.data.value);
    }
    CHECK(created.size() == 64);
    CHECK(died == created);
    CHECK(reaped == created);
    REQUIRE(concurrency.size() == 128);
    CHECK(*std::max_element(concurrency.begin(), concurrency.end()) == uint64_t(peak));
    CHECK(peak == 65);
    CHECK(concurrency.back() == uint64_t(settled));
    CHECK(settled == 1);
}

TEST_CASE("td_catchsig: the signal and the thread it was delivered to", "[thread_events]")
{
    Workload workload({"signals"});
    pid_t pid = workload.child.pid(), first = workload.ready_tid(0), second = workload.ready_tid(1);
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    workload.child.say("a\n");
    REQUIRE(workload.child.read_line() == "sent 2\n");
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    workload.child.say("q\n");

    std::multiset<std::pair<pid_t, uint64_t>> delivered;
    for (const auto &e : thread_events(stream.get()))
        if (e.event == TD_CATCHSIG)
            delivered.insert({e.data.tid, e.data.value});
    CHECK(delivered ==
          std::multiset<std::pair<pid_t, uint64_t>>{{first, SIGUSR1}, {second, SIGUSR2}});
}

TEST_CASE("td_lock_try: the waiting thread and the mutex's address", "[thread_events]")
{
    Workload workload({"mutex"});
    pid_t pid = workload.child.pid(), waiter = workload.ready_tid(0);
    uint64_t mutex = std::stoull(workload.ready.at(2), nullptr, 16);
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    workload.child.say("go\n");
    REQUIRE(workload.child.read_line() == "done\n");
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    size_t on_mutex = 0;
    for (const auto &e : thread_events(stream.get()))
        if (e.event == TD_LOCK_TRY && e.data.tid == waiter && e.data.value == mutex)
            ++on_mutex;
    CHECK(on_mutex >= 1);
}

TEST_CASE("td_timeout: an expired pthread_cond_timedwait, with the condition's futex",
          "[thread_events]")
{
    Workload workload({"timedwait"});
    pid_t pid = workload.child.pid(), waiter = workload.ready_tid(0);
    uint64_t cond = std::stoull(workload.ready.at(2), nullptr, 16);
    uint64_t size = std::stoull(workload.ready.at(3));
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    workload.child.say("go\n");
    REQUIRE(workload.child.read_line() == "done 1\n"); // it did time out
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::vector<uint64_t> timeouts;
    for (const auto &e : thread_events(stream.get()))
        if (e.event == TD_TIMEOUT && e.data.tid == waiter)
            timeouts.push_back(e.data.value);
    REQUIRE(timeouts.size() == 1);
    CHECK(timeouts[0] >= cond);
    CHECK(timeouts[0] < cond + size);
}

TEST_CASE("td_pri_inherit: a PI mutex holder boosted to its waiter's SCHED_FIFO priority",
          "[thread_events]")
{
    Workload workload({"pi"});
    pid_t pid = workload.child.pid(), holder = workload.ready_tid(0);
    StreamGuard stream = thread_stream(pid);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    workload.child.say("go\n");
    REQUIRE(workload.child.read_line() == "done\n");
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::vector<TdEvent> boosts;
    for (const auto &e : thread_events(stream.get()))
        if (e.event == TD_PRI_INHERIT)
            boosts.push_back(e);
    REQUIRE(boosts.size() >= 1);
    CHECK(boosts[0].data.tid == holder);
    CHECK(boosts[0].data.value == 50);  // sched_priority
    CHECK(boosts[0].data.value2 == 49); // the kernel's prio
}

// ---- the seed's facility -------------------------------------------------------

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
          "[thread_events]")
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
          "[thread_events]")
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

TEST_CASE("td_ta_event_addr: one exported reporting function per event type", "[thread_events]")
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

TEST_CASE("td event set macros", "[thread_events]")
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

TEST_CASE("td error codes", "[thread_events]")
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
          "[thread_events]")
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

namespace {
// Whether a BPF program of that name and type is loaded in the kernel now.
bool program_loaded(const std::string &name, bpf_prog_type type)
{
    for (__u32 id = 0; bpf_prog_get_next_id(id, &id) == 0;) {
        int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0)
            continue;
        bpf_prog_info info{};
        __u32 length = sizeof info;
        bool same = bpf_obj_get_info_by_fd(fd, &info, &length) == 0 && name == info.name &&
                    info.type == type;
        close(fd);
        if (same)
            return true;
    }
    return false;
}

// Sets an environment variable for the scope.
struct ScopedEnvironment {
    ScopedEnvironment(const char *name, const char *value) : name(name) { setenv(name, value, 1); }
    ~ScopedEnvironment() { unsetenv(name); }
    const char *name;
};
} // namespace

TEST_CASE("raw tracepoints stand in for tp_btf: the same events, the same counts",
          "[thread_events]")
{
    // On a kernel whose BTF lacks a tracepoint's type the raw_tp twin of
    // each program is loaded; the variable forces that here.
    ScopedEnvironment raw("POSIXTRACE_RAW_TRACEPOINTS", "1");
    Workload workload({"sleeper", "300"});
    pid_t pid = workload.child.pid(), worker = workload.ready_tid(0);
    StreamGuard stream = thread_stream(pid);
    // td_sched_switch_raw: the kernel keeps 15 characters of a name
    CHECK(program_loaded("td_sched_switch", BPF_PROG_TYPE_RAW_TRACEPOINT));
    REQUIRE(posix_trace_start(stream.get()) == 0);
    SwitchCounts before = switches_of(pid, worker);
    workload.child.say("go\n");
    REQUIRE(workload.child.read_line() == "done\n");
    SwitchCounts after = switches_of(pid, worker);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    Losses lost;
    auto events = thread_events(stream.get(), &lost);
    CHECK(lost.other == 0);
    long slept = long(count(events, TD_SLEEP, worker)), hidden_in = lost.hidden_in[worker],
         hidden_out = lost.hidden_out[worker], hidden_ready = lost.hidden_ready[worker];
    CAPTURE(slept, hidden_in, hidden_out, hidden_ready);
    CHECK(std::labs(slept + hidden_out - (after.voluntary - before.voluntary)) <= 2);
    CHECK(std::labs((long(count(events, TD_SWITCHTO, worker)) + hidden_in) -
                    (long(count(events, TD_SWITCHFROM, worker)) + hidden_out)) <= 1);
    CHECK(long(count(events, TD_READY, worker)) + hidden_ready >= 300); // woken, or reported
    for (const auto &e : events)
        if (e.data.tid == worker)
            CHECK(std::string(e.data.name) == "thread_workload");
}

TEST_CASE("td TD_NOCAPAB: the kernel's per-thread table is full", "[thread_events]")
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
