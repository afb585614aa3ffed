// Which thread an event is about, when tids are not unique: the library's
// own threads stay out of the trace, and a tid the kernel hands out again
// (made to, here, through ns_last_pid) names a new thread, whose events are
// all there and which takes nothing from the earlier holder of its tid.
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <dirent.h>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <pthread.h>
#include <semaphore.h>
#include <trace.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace test_support;

namespace {

constexpr trace_event_id_t td_event_id(td_event_e event)
{
    return POSIX_TRACE_TD_EVENT_ID(event);
}

// Reads every event the stream has, handing each to `visit` with its data
// read as td_event_data. Returns the first nonzero `visit` returned, or
// `read_error` if a read failed, else 0.
template <class Visit> int each_event(trace_id_t trid, int read_error, Visit visit)
{
    for (;;) {
        posix_trace_event_info info;
        td_event_data data{};
        size_t len;
        int none;
        if (posix_trace_trygetnext_event(trid, &info, &data, sizeof data, &len, &none) != 0)
            return read_error;
        if (none)
            return 0;
        if (int verdict = visit(info, data))
            return verdict;
    }
}

// In a fresh process with one thread: a self-traced stream with the default
// filter while the thread sleeps, then creates and joins one thread. Exit
// status: 0, or the number of the check that failed.
int library_threads_stay_out()
{
    trace_id_t trid;
    if (posix_trace_create(0, nullptr, &trid) != 0 || posix_trace_start(trid) != 0)
        return 10;
    usleep(300 * 1000);
    pthread_t worker;
    pid_t worker_tid = 0;
    if (pthread_create(
            &worker, nullptr,
            [](void *tid) -> void * {
                *static_cast<pid_t *>(tid) = gettid();
                return nullptr;
            },
            &worker_tid) != 0)
        return 11;
    pthread_join(worker, nullptr);
    usleep(300 * 1000);
    posix_trace_stop(trid);
    std::set<pid_t> app = {gettid(), worker_tid};
    size_t thread_events = 0;
    std::vector<uint64_t> concurrency;
    int verdict =
        each_event(trid, 12, [&](const posix_trace_event_info &info, const td_event_data &data) {
            if (!is_thread_event(info.posix_event_id))
                return 0;
            ++thread_events;
            if (!app.count(info.posix_tid) || !app.count(data.tid))
                return 1; // an event about a thread that is not the application's
            if (info.posix_event_id == td_event_id(TD_CREATE) && !app.count(pid_t(data.value)))
                return 2;
            if (info.posix_event_id == td_event_id(TD_CONCURRENCY))
                concurrency.push_back(data.value);
            return 0;
        });
    if (verdict)
        return verdict;
    posix_trace_shutdown(trid);
    if (thread_events > 60) // the main thread slept twice, the worker lived once
        return 3;
    if (concurrency != std::vector<uint64_t>{2, 1}) // the worker's create and death
        return 4;
    return 0;
}

} // namespace

TEST_CASE("the library's own threads are never traced nor counted in td_concurrency",
          "[thread_events][self-tracing]")
{
    CHECK(in_child(library_threads_stay_out) == 0);
}

// The child of a process whose drain thread runs has none of it.
TEST_CASE("a forked child does not count its parent's library threads in td_concurrency",
          "[thread_events][self-tracing]")
{
    StreamGuard parent_stream = make_stream();
    REQUIRE(posix_trace_start(parent_stream.get()) == 0);
    CHECK(in_child(library_threads_stay_out) == 0);
}

namespace {

// The tid of this process's thread named `name`, or 0.
pid_t thread_named(const char *name)
{
    std::unique_ptr<DIR, int (*)(DIR *)> tasks(opendir("/proc/self/task"), closedir);
    while (dirent *entry = tasks ? readdir(tasks.get()) : nullptr) {
        std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
        std::string found;
        if (std::getline(comm, found) && found == name)
            return pid_t(std::atoi(entry->d_name));
    }
    return 0;
}

// The kernel hands a dead thread's tid out again as soon as it wraps (here
// it is made to, through ns_last_pid). A thread of the application that gets
// the tid of a drain thread that just ended is the application's: its events
// are all there, and the kernel's last words about the drain are not.
// Exit status: 0, or the number of the check that failed.
int tid_of_a_gone_library_thread_is_reused()
{
    trace_id_t first, second;
    if (posix_trace_create(0, nullptr, &first) != 0 || posix_trace_start(first) != 0)
        return 10;
    pid_t drain = thread_named("posixtrace-drn");
    if (drain <= 1)
        return 11;
    trace_event_id_t id; // the second stream's drain is created while the first one lives
    if (posix_trace_create(0, nullptr, &second) != 0 || posix_trace_start(second) != 0 ||
        posix_trace_eventid_open("reused.tid", &id) != 0)
        return 12;
    posix_trace_shutdown(first);
    struct Worker {
        pid_t wanted, tid;
        trace_event_id_t id;
    } worker{drain, 0, id};
    // Another process may take the tid first: then the next try.
    for (int attempt = 0; attempt < 100 && worker.tid != drain; ++attempt) {
        std::ofstream("/proc/sys/kernel/ns_last_pid") << drain - 1 << std::endl;
        pthread_t thread;
        if (pthread_create(
                &thread, nullptr,
                [](void *arg) -> void * {
                    auto *w = static_cast<Worker *>(arg);
                    w->tid = gettid();
                    for (uint32_t i = 0; w->tid == w->wanted && i < 100; ++i)
                        posix_trace_event(w->id, &i, sizeof i);
                    return nullptr;
                },
                &worker) != 0)
            return 13;
        pthread_join(thread, nullptr);
    }
    if (worker.tid != drain)
        return 14;
    usleep(100 * 1000);
    posix_trace_stop(second);
    size_t user = 0, created = 0, died = 0;
    int verdict =
        each_event(second, 15, [&](const posix_trace_event_info &info, const td_event_data &data) {
            user += info.posix_event_id == id && info.posix_tid == drain;
            created += info.posix_event_id == td_event_id(TD_CREATE) && pid_t(data.value) == drain;
            died += info.posix_event_id == td_event_id(TD_DEATH) && data.tid == drain;
            return 0;
        });
    if (verdict)
        return verdict;
    posix_trace_shutdown(second);
    if (user != 100)
        return 1;
    if (created != 1)
        return 2;
    if (died != 1) // the worker's death; not the drain's, if it came after the start
        return 3;
    return 0;
}

} // namespace

TEST_CASE("a thread that gets the tid of a library thread gone just before is traced",
          "[thread_events][self-tracing]")
{
    CHECK(in_child(tid_of_a_gone_library_thread_is_reused) == 0);
}

namespace {

// A thread that says its tid, waits to be let go, then sleeps three times
// (three switches in) and ends. With `wanted` set, a thread that did not get
// that tid ends at once. Each has a stack of its own, so that its pthread_t
// (the FS base the kernel reports) tells it from any other holder of its tid.
struct Sleeper {
    explicit Sleeper(pid_t wanted_tid = 0) : wanted(wanted_tid), stack(256 * 1024)
    {
        sem_init(&started, 0, 0);
        sem_init(&go, 0, 0);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstack(&attr, stack.data(), stack.size());
        ok = pthread_create(&thread, &attr, &Sleeper::run, this) == 0;
        pthread_attr_destroy(&attr);
        if (ok)
            sem_wait(&started);
    }
    ~Sleeper()
    {
        finish();
        sem_destroy(&started);
        sem_destroy(&go);
    }
    bool has_tid() const { return tid != 0 && (wanted == 0 || tid == wanted); }
    void finish()
    {
        if (!ok)
            return;
        sem_post(&go);
        pthread_join(thread, nullptr);
        ok = false;
    }

    static void *run(void *arg)
    {
        auto *self = static_cast<Sleeper *>(arg);
        self->pthread_id = uint64_t(pthread_self());
        self->tid = gettid();
        bool mine = self->has_tid();
        sem_post(&self->started);
        if (!mine)
            return nullptr;
        sem_wait(&self->go);
        for (int i = 0; i < 3; ++i)
            usleep(2000);
        return nullptr;
    }

    pid_t wanted, tid = 0;
    uint64_t pthread_id = 0;
    std::vector<char> stack;
    sem_t started, go;
    pthread_t thread{};
    bool ok = false;
};

// In a fresh process: a thread agent on a self-traced stream. A first thread
// reports its switches in and its death; when it ended, a second thread is
// made to get its tid. The second reports nothing unless enabled for itself
// (`enable_second`), and then all its switches in from then on.
// Exit status: 0, or the number of the check that failed.
int agent_settings_stay_with_their_thread(bool enable_second)
{
    trace_id_t trid;
    td_thragent_t *agent = nullptr;
    trace_event_id_t enabled;
    if (posix_trace_create(0, nullptr, &trid) != 0 ||
        td_ta_new_from_stream(trid, getpid(), &agent) != TD_OK ||
        posix_trace_eventid_open("second.enabled", &enabled) != 0 || posix_trace_start(trid) != 0)
        return 10;
    td_thr_events_t first_events, second_events;
    td_event_emptyset(&first_events);
    td_event_addset(&first_events, TD_SWITCHTO);
    td_event_addset(&first_events, TD_DEATH);
    td_event_emptyset(&second_events);
    td_event_addset(&second_events, TD_SWITCHTO);

    Sleeper first;
    td_thrhandle_t handle;
    if (!first.has_tid() || td_ta_map_lwp2thr(agent, first.tid, &handle) != TD_OK ||
        td_thr_set_event(&handle, &first_events) != TD_OK ||
        td_thr_event_enable(&handle, 1) != TD_OK)
        return 11;
    const pid_t tid = first.tid;
    first.finish();

    std::unique_ptr<Sleeper> second; // another process may take the tid first: then the next try
    for (int attempt = 0; attempt < 100 && !(second && second->has_tid()); ++attempt) {
        second.reset();
        std::ofstream("/proc/sys/kernel/ns_last_pid") << tid - 1 << std::endl;
        second = std::make_unique<Sleeper>(tid);
    }
    if (!second->has_tid() || second->pthread_id == first.pthread_id)
        return 12;
    posix_trace_event(enabled, nullptr, 0);
    if (enable_second && (td_ta_map_lwp2thr(agent, tid, &handle) != TD_OK ||
                          td_thr_set_event(&handle, &second_events) != TD_OK ||
                          td_thr_event_enable(&handle, 1) != TD_OK))
        return 13;
    second->finish();
    usleep(20 * 1000);
    posix_trace_stop(trid);

    bool second_enabled = false;
    size_t first_in = 0, first_deaths = 0, second_in_before = 0, second_in_after = 0, other = 0;
    int verdict =
        each_event(trid, 14, [&](const posix_trace_event_info &info, const td_event_data &data) {
            second_enabled = second_enabled || info.posix_event_id == enabled;
            if (!is_thread_event(info.posix_event_id) || data.tid != tid)
                return 0;
            bool switch_in = info.posix_event_id == td_event_id(TD_SWITCHTO);
            bool death = info.posix_event_id == td_event_id(TD_DEATH);
            // A thread switched in after its exit has no FS base any more
            // (0): the first, in its last moments; the second starts with one.
            if (data.pthread_id == first.pthread_id || data.pthread_id == 0) {
                first_in += switch_in;
                first_deaths += death;
            } else if (data.pthread_id == second->pthread_id && switch_in) {
                ++(second_enabled ? second_in_after : second_in_before);
            } else {
                ++other; // the second's death is in no mask of it
            }
            return 0;
        });
    td_ta_delete(agent);
    posix_trace_shutdown(trid);
    if (verdict)
        return verdict;
    if (first_in < 3 || first_deaths != 1)
        return 1;
    if (second_in_before != 0 || other != 0)
        return 2;
    if (enable_second ? second_in_after < 3 : second_in_after != 0)
        return 3;
    return 0;
}

} // namespace

TEST_CASE("a thread agent's settings stay with their thread when its tid is handed out again",
          "[thread_events][self-tracing]")
{
    SECTION("the next holder of the tid reports nothing of the first's settings")
    {
        CHECK(in_child([] { return agent_settings_stay_with_their_thread(false); }) == 0);
    }
    SECTION("the next holder's own settings hold, whenever the first is freed")
    {
        CHECK(in_child([] { return agent_settings_stay_with_their_thread(true); }) == 0);
    }
}
