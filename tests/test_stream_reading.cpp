// Tests of the trace stream functions of <trace.h> on real BPF: the getnext
// family, shutdown, invalid handles and the event types of a stream.
// Every test creates its own stream tracing this process (pid 0) and emits
// user events with posix_trace_event(). Runs as root.
#include <posix_trace/events.h>
#include <trace.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "log_support.hpp"
#include "test_support.hpp"

using namespace test_support;

namespace {

const std::vector<trace_event_id_t> kBuiltinIds = [] {
    std::vector<trace_event_id_t> ids;
    for (trace_event_id_t id = 0; id <= 10; ++id) // POSIX system events, process events
        ids.push_back(id);
    for (trace_event_id_t id = 16; id <= 29; ++id)
        ids.push_back(id);
    ids.push_back(31);
    return ids;
}();

// Every function taking a trid answers EINVAL for this one.
void check_all_einval(trace_id_t trid)
{
    CAPTURE(trid);
    trace_attr_t attr;
    posix_trace_status_info status{};
    trace_event_set_t set;
    posix_trace_eventset_empty(&set);
    trace_event_id_t id = 0;
    int unavailable = 0;
    char name[TRACE_EVENT_NAME_MAX];

    CHECK(posix_trace_start(trid) == EINVAL);
    CHECK(posix_trace_stop(trid) == EINVAL);
    CHECK(posix_trace_clear(trid) == EINVAL);
    CHECK(posix_trace_get_attr(trid, &attr) == EINVAL);
    CHECK(posix_trace_get_status(trid, &status) == EINVAL);
    CHECK(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET) == EINVAL);
    CHECK(posix_trace_get_filter(trid, &set) == EINVAL);
    CHECK(get_next(trid, GetNext::Try).err == EINVAL);
    timespec soon = realtime_in(200'000'000);
    CHECK(get_next(trid, GetNext::Timed, &soon).err == EINVAL);
    {
        auto blocked = run_detached([trid] { return get_next(trid, GetNext::Block); });
        if (blocked.wait_for(10s) == std::future_status::ready)
            CHECK(blocked.get().err == EINVAL);
        else
            FAIL_CHECK("posix_trace_getnext_event blocked on an invalid trid");
    }
    CHECK(posix_trace_trid_eventid_open(trid, "stream_api.invalid_trid", &id) == EINVAL);
    CHECK(posix_trace_eventid_get_name(trid, POSIX_TRACE_START, name) == EINVAL);
    CHECK(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == EINVAL);
    CHECK(posix_trace_eventtypelist_rewind(trid) == EINVAL);
    CHECK(posix_trace_shutdown(trid) == EINVAL);
}

volatile sig_atomic_t g_sigusr1_count = 0;
void count_sigusr1(int)
{
    g_sigusr1_count = g_sigusr1_count + 1;
}

// State of a thread from /proc ('S' while it sleeps in a blocking call).
char thread_state(pid_t tid)
{
    std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto paren = content.rfind(')');
    return paren == std::string::npos || paren + 2 >= content.size() ? '?' : content[paren + 2];
}

} // namespace

// ---- getnext family -------------------------------------------------------------

TEST_CASE("trygetnext on an empty stream: 0 with unavailable set", "[stream][self-tracing]")
{
    auto stream = make_stream();
    auto r = get_next(stream.get(), GetNext::Try);
    CHECK(r.err == 0);
    CHECK(r.unavailable != 0);
}

// How soon it returns is a benchmark's (`bench_user_event wake`): a bound
// here would fail on a loaded host.
TEST_CASE("getnext blocks until an event is emitted, then returns it", "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    filter_thread_events(trid);
    trace_event_id_t a = user_event("stream_api.wake_reader");

    REQUIRE(posix_trace_start(trid) == 0);
    timespec deadline = realtime_in(1'000'000'000);
    auto start = get_next(trid, GetNext::Timed, &deadline);
    REQUIRE(start.err == 0);
    REQUIRE(start.info.posix_event_id == POSIX_TRACE_START);

    auto reader = run_detached([trid] { return get_next(trid, GetNext::Block); });
    std::this_thread::sleep_for(100ms);
    REQUIRE(reader.wait_for(0s) != std::future_status::ready); // blocked on the empty stream
    auto emitted = Clock::now();
    posix_trace_event(a, "wake", 4);

    if (reader.wait_for(10s) != std::future_status::ready) {
        FAIL_CHECK("posix_trace_getnext_event did not return after the event");
        stream.shutdown(); // releases the reader
        reader.wait_for(2s);
        return;
    }
    ReadResult r = reader.get();
    CHECK(r.err == 0);
    CHECK(r.unavailable == 0);
    CHECK(r.info.posix_event_id == a);
    CHECK(r.data_len == 4);
    CHECK(r.returned_at >= emitted);
}

TEST_CASE("timedgetnext: ETIMEDOUT, and EINVAL for a bad abstime only when nothing is available",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    filter_thread_events(trid);

    // Each call is made in a thread of its own: one that never returns is
    // reported after 10 s (no bound on how soon: a loaded host is slow).
    auto timed_get_next = [trid](timespec abstime) {
        return run_detached([trid, abstime] {
            ReadResult r = get_next(trid, GetNext::Timed, &abstime);
            timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            bool abstime_passed = now.tv_sec > abstime.tv_sec ||
                                  (now.tv_sec == abstime.tv_sec && now.tv_nsec >= abstime.tv_nsec);
            return std::make_pair(r, abstime_passed);
        });
    };
    SECTION("abstime 50 ms ahead, nothing emitted: ETIMEDOUT once abstime has passed")
    {
        auto call = timed_get_next(realtime_in(50'000'000));
        REQUIRE(call.wait_for(10s) == std::future_status::ready);
        auto [r, abstime_passed] = call.get();
        CHECK(r.err == ETIMEDOUT);
        CHECK(r.unavailable != 0);
        CHECK(abstime_passed);
    }
    SECTION("abstime already past: ETIMEDOUT")
    {
        auto call = timed_get_next(realtime_in(-1'000'000'000));
        REQUIRE(call.wait_for(10s) == std::future_status::ready);
        auto [r, abstime_passed] = call.get();
        CHECK(r.err == ETIMEDOUT);
        CHECK(r.unavailable != 0);
        CHECK(abstime_passed);
    }
    SECTION("invalid abstime, nothing available: EINVAL")
    {
        timespec abstime = realtime_in(50'000'000);
        abstime.tv_nsec = -1;
        CHECK(get_next(trid, GetNext::Timed, &abstime).err == EINVAL);
        abstime.tv_nsec = 1000000000;
        CHECK(get_next(trid, GetNext::Timed, &abstime).err == EINVAL);
    }
    SECTION("invalid abstime, an event available: the event")
    {
        REQUIRE(posix_trace_start(trid) == 0);
        REQUIRE(posix_trace_stop(trid) == 0); // start and stop are now readable
        timespec abstime = realtime_in(50'000'000);
        abstime.tv_nsec = -1;
        auto r = get_next(trid, GetNext::Timed, &abstime);
        CHECK(r.err == 0);
        CHECK(r.unavailable == 0);
        CHECK(r.info.posix_event_id == POSIX_TRACE_START);
        abstime.tv_nsec = 1000000000;
        r = get_next(trid, GetNext::Timed, &abstime);
        CHECK(r.err == 0);
        CHECK(r.unavailable == 0);
        CHECK(r.info.posix_event_id == POSIX_TRACE_STOP);
    }
}

TEST_CASE("getnext and timedgetnext: EINTR when a signal handler runs in the blocked thread",
          "[stream][self-tracing]")
{
    GetNext how = GENERATE(GetNext::Block, GetNext::Timed);
    INFO((how == GetNext::Block ? "posix_trace_getnext_event" : "posix_trace_timedgetnext_event"));
    timespec abstime{};
    clock_gettime(CLOCK_REALTIME, &abstime);
    abstime.tv_sec += 30; // ETIMEDOUT would take 30 s: the signal comes first
    struct sigaction action {
    }, previous{};
    action.sa_handler = count_sigusr1;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    REQUIRE(sigaction(SIGUSR1, &action, &previous) == 0);
    struct Restore {
        struct sigaction saved;
        ~Restore() { sigaction(SIGUSR1, &saved, nullptr); }
    } restore{previous};

    auto stream = make_stream();
    trace_id_t trid = stream.get();
    filter_thread_events(trid);

    auto ids = std::make_shared<std::promise<std::pair<pthread_t, pid_t>>>();
    auto ids_ready = ids->get_future();
    auto reader = run_detached([trid, ids, how, abstime] {
        ids->set_value({pthread_self(), gettid()});
        return get_next(trid, how, &abstime);
    });
    auto [thread, tid] = ids_ready.get();
    for (int i = 0; i < 100 && thread_state(tid) != 'S'; ++i)
        std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(50ms);
    REQUIRE(reader.wait_for(0s) != std::future_status::ready);

    g_sigusr1_count = 0;
    REQUIRE(pthread_kill(thread, SIGUSR1) == 0);
    if (reader.wait_for(10s) != std::future_status::ready) {
        FAIL_CHECK("the blocked call did not return after the signal");
        stream.shutdown();
        reader.wait_for(2s);
        return;
    }
    CHECK(g_sigusr1_count == 1);
    CHECK(reader.get().err == EINTR);
}

TEST_CASE("getnext family: EINVAL for NULL event, data_len or unavailable",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(posix_trace_stop(trid) == 0); // events available: the checks are not about waiting

    posix_trace_event_info info;
    char data[64];
    size_t len = 0;
    int unavailable = 0;
    timespec abstime = realtime_in(100'000'000);

    CHECK(posix_trace_getnext_event(trid, nullptr, data, sizeof data, &len, &unavailable) ==
          EINVAL);
    CHECK(posix_trace_getnext_event(trid, &info, data, sizeof data, nullptr, &unavailable) ==
          EINVAL);
    CHECK(posix_trace_getnext_event(trid, &info, data, sizeof data, &len, nullptr) == EINVAL);
    CHECK(posix_trace_trygetnext_event(trid, nullptr, data, sizeof data, &len, &unavailable) ==
          EINVAL);
    CHECK(posix_trace_trygetnext_event(trid, &info, data, sizeof data, nullptr, &unavailable) ==
          EINVAL);
    CHECK(posix_trace_trygetnext_event(trid, &info, data, sizeof data, &len, nullptr) == EINVAL);
    CHECK(posix_trace_timedgetnext_event(trid, nullptr, data, sizeof data, &len, &unavailable,
                                         &abstime) == EINVAL);
    CHECK(posix_trace_timedgetnext_event(trid, &info, data, sizeof data, nullptr, &unavailable,
                                         &abstime) == EINVAL);
    CHECK(posix_trace_timedgetnext_event(trid, &info, data, sizeof data, &len, nullptr, &abstime) ==
          EINVAL);

    // None of those consumed an event.
    CHECK(ids_of(read_available(trid)) ==
          std::vector<trace_event_id_t>{POSIX_TRACE_START, POSIX_TRACE_STOP});
}

// ---- shutdown and invalid handles ------------------------------------------------

TEST_CASE("shutdown: a reader blocked in getnext returns EINVAL", "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    filter_thread_events(trid);
    REQUIRE(posix_trace_start(trid) == 0);
    auto started = get_next(trid, GetNext::Try);
    (void)started; // the start event, if already there

    auto reader = run_detached([trid] {
        // Reads until blocked on an empty stream.
        for (;;) {
            ReadResult r = get_next(trid, GetNext::Block);
            if (r.err != 0 || r.info.posix_event_id != POSIX_TRACE_START)
                return r;
        }
    });
    std::this_thread::sleep_for(100ms);
    REQUIRE(reader.wait_for(0s) != std::future_status::ready);
    CHECK(stream.shutdown() == 0);
    REQUIRE(reader.wait_for(10s) == std::future_status::ready);
    CHECK(reader.get().err == EINVAL);
}

// get_status from a thread while another shuts the stream down: each call
// answers, or says EINVAL once the id is gone; neither side hangs. (The
// narrowest window, a caller preempted between finding the stream and
// locking it for a whole shutdown, is not forced here: report_status reads
// nothing a shutdown frees.)
TEST_CASE("shutdown: get_status from another thread answers or says EINVAL",
          "[stream][self-tracing]")
{
    std::atomic<long> answered{0}, refused{0}, other{0};
    for (int cycle = 0; cycle < 300; ++cycle) {
        trace_id_t trid;
        REQUIRE(posix_trace_create(0, nullptr, &trid) == 0);
        REQUIRE(posix_trace_start(trid) == 0);
        long answered_before = answered.load();
        std::atomic<bool> asking{true};
        std::thread asker([&] {
            posix_trace_status_info status;
            while (asking.load()) {
                int err = posix_trace_get_status(trid, &status);
                (err == 0 ? answered : err == EINVAL ? refused : other)++;
                if (err)
                    return;
            }
        });
        while (answered.load() == answered_before) // it holds the stream
            std::this_thread::yield();
        REQUIRE(posix_trace_shutdown(trid) == 0);
        asking = false;
        asker.join();
    }
    CHECK(answered.load() > 0);
    CHECK(other.load() == 0);
}

// A thread that keeps reading one stream finds it again without the
// table's lock; a shutdown, in any thread, must still end its reads.
TEST_CASE("shutdown by another thread: the thread that kept reading the stream gets EINVAL",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    filter_thread_events(trid);
    REQUIRE(posix_trace_start(trid) == 0);
    for (int i = 0; i < 3; ++i) // the start event, then nothing
        REQUIRE(get_next(trid, GetNext::Try).err == 0);
    std::thread([&stream] { CHECK(stream.shutdown() == 0); }).join();
    CHECK(get_next(trid, GetNext::Try).err == EINVAL);
    CHECK(get_next(trid, GetNext::Block).err == EINVAL);
    auto created_since = make_stream(); // a newer stream does not revive the id
    CHECK(get_next(trid, GetNext::Try).err == EINVAL);
    CHECK(get_next(created_since.get(), GetNext::Try).err == 0);
}

TEST_CASE("one thread reading two streams and a log in turn gets each one's own events",
          "[stream][self-tracing]")
{
    TempFile file;
    std::vector<Event> logged = write_user_event_log(file, 5, nullptr);
    REQUIRE(logged.size() == 7); // the start, five events, the stop
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);

    trace_event_id_t first_id = user_event("reading.first"),
                     second_id = user_event("reading.second");
    auto first = make_stream(), second = make_stream();
    for (auto [trid, hidden] : {std::pair{first.get(), second_id}, {second.get(), first_id}}) {
        trace_event_set_t set;
        posix_trace_eventset_empty(&set);
        for (trace_event_id_t id = POSIX_TRACE_TD_EVENT_FIRST;
             id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT; ++id)
            posix_trace_eventset_add(id, &set);
        posix_trace_eventset_add(hidden, &set); // the other stream's event
        REQUIRE(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET) == 0);
        REQUIRE(posix_trace_start(trid) == 0);
    }
    for (int i = 0; i < 5; ++i) {
        posix_trace_event(first_id, &i, sizeof i);
        posix_trace_event(second_id, &i, sizeof i);
    }
    REQUIRE(posix_trace_stop(first.get()) == 0);
    REQUIRE(posix_trace_stop(second.get()) == 0);

    std::vector<trace_event_id_t> from_first, from_second;
    std::vector<Event> from_log;
    for (;;) {
        ReadResult a = get_next(first.get(), GetNext::Try),
                   b = get_next(second.get(), GetNext::Try);
        Event c;
        unsigned char data[kReadBufferBytes];
        size_t length = 0;
        int log_ended = 0;
        REQUIRE((a.err | b.err) == 0);
        REQUIRE(posix_trace_getnext_event(log.get(), &c.info, data, sizeof data, &length,
                                          &log_ended) == 0);
        if (!a.unavailable && !is_thread_event(a.info.posix_event_id))
            from_first.push_back(a.info.posix_event_id);
        if (!b.unavailable && !is_thread_event(b.info.posix_event_id))
            from_second.push_back(b.info.posix_event_id);
        if (!log_ended) {
            c.data.assign(data, data + length);
            from_log.push_back(std::move(c));
        }
        if (a.unavailable && b.unavailable && log_ended)
            break;
    }
    auto expected = [](trace_event_id_t id) {
        std::vector<trace_event_id_t> ids{POSIX_TRACE_START};
        ids.insert(ids.end(), 5, id);
        ids.push_back(POSIX_TRACE_STOP);
        return ids;
    };
    CHECK(from_first == expected(first_id));
    CHECK(from_second == expected(second_id));
    REQUIRE(from_log.size() == logged.size());
    for (size_t i = 0; i < logged.size(); ++i)
        CHECK(same_event(from_log[i], logged[i]));
}

TEST_CASE("shutdown: afterwards every function answers EINVAL for the trid",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(stream.shutdown() == 0);
    check_all_einval(trid); // includes a second shutdown
    CHECK(posix_trace_shutdown(trid) == EINVAL);
}

TEST_CASE("invalid trids: EINVAL from every function", "[stream][self-tracing]")
{
    auto stream = make_stream(); // a live stream must not make other ids valid
    for (trace_id_t trid : {0, -1, 999999})
        check_all_einval(trid);
    CHECK(status_of(stream.get()).posix_stream_status == POSIX_TRACE_SUSPENDED);
}

TEST_CASE("a forked child gets EINVAL for its parent's trid", "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    REQUIRE(posix_trace_start(trid) == 0);

    CHECK(in_child([trid] { return posix_trace_start(trid); }) == EINVAL);
    CHECK(in_child([trid] { return posix_trace_stop(trid); }) == EINVAL);
    CHECK(in_child([trid] { return posix_trace_clear(trid); }) == EINVAL);
    CHECK(in_child([trid] {
              posix_trace_status_info status;
              return posix_trace_get_status(trid, &status);
          }) == EINVAL);
    CHECK(in_child([trid] {
              trace_event_set_t set;
              return posix_trace_get_filter(trid, &set);
          }) == EINVAL);
    CHECK(in_child([trid] { return get_next(trid, GetNext::Try).err; }) == EINVAL);
    CHECK(in_child([trid] {
              alarm(5); // never hang the parent
              return get_next(trid, GetNext::Block).err;
          }) == EINVAL);
    CHECK(in_child([trid] { return posix_trace_shutdown(trid); }) == EINVAL);

    // The parent's stream is untouched.
    CHECK(status_of(trid).posix_stream_status == POSIX_TRACE_RUNNING);
    REQUIRE(posix_trace_stop(trid) == 0);
    auto ids = ids_of(read_available(trid));
    REQUIRE(ids.size() >= 2);
    CHECK(ids.front() == POSIX_TRACE_START);
    CHECK(ids.back() == POSIX_TRACE_STOP);
}

// The forking thread had just found the stream for reading; its child,
// which inherits that thread's memory, must not read the parent's stream.
TEST_CASE("a forked child gets EINVAL for the trid its forking thread was reading",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    filter_thread_events(trid);
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(get_next(trid, GetNext::Try).err == 0);
    CHECK(in_child([trid] { return get_next(trid, GetNext::Try).err; }) == EINVAL);
    CHECK(in_child([trid] {
              alarm(5); // never hang the parent
              return get_next(trid, GetNext::Block).err;
          }) == EINVAL);
    CHECK(get_next(trid, GetNext::Try).err == 0);
}

// ---- event types -------------------------------------------------------------------

TEST_CASE("eventtypelist: system, thread, unnamed and every user event type; rewind",
          "[stream][self-tracing]")
{
    trace_event_id_t early = user_event("stream_api.typelist_early");
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t late = user_event("stream_api.typelist_late");
    trace_event_id_t via_trid = 0;
    REQUIRE(posix_trace_trid_eventid_open(trid, "stream_api.typelist_trid", &via_trid) == 0);

    auto list_all = [&] {
        std::vector<trace_event_id_t> ids;
        for (int i = 0; i < 10000; ++i) {
            trace_event_id_t id = 0xdead;
            int unavailable = -1;
            REQUIRE(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
            if (unavailable)
                break;
            ids.push_back(id);
        }
        return ids;
    };
    auto ids = list_all();

    // Still unavailable at the end.
    trace_event_id_t id = 0;
    int unavailable = 0;
    REQUIRE(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
    CHECK(unavailable != 0);

    std::set<trace_event_id_t> listed(ids.begin(), ids.end());
    CHECK(listed.size() == ids.size()); // no duplicates

    // Expected: the built-in ids and every user id that has a name.
    std::set<trace_event_id_t> expected(kBuiltinIds.begin(), kBuiltinIds.end());
    char name[TRACE_EVENT_NAME_MAX];
    for (trace_event_id_t user = POSIX_TRACE_USER_EVENT_FIRST;
         user < POSIX_TRACE_USER_EVENT_FIRST + TRACE_USER_EVENT_MAX; ++user)
        if (posix_trace_eventid_get_name(trid, user, name) == 0)
            expected.insert(user);
    CHECK(expected.count(early) == 1);
    CHECK(expected.count(late) == 1);
    CHECK(expected.count(via_trid) == 1);
    CHECK(listed == expected);
    CHECK(listed.count(early) == 1);
    CHECK(listed.count(late) == 1);
    CHECK(listed.count(via_trid) == 1);

    REQUIRE(posix_trace_eventtypelist_rewind(trid) == 0);
    auto again = list_all();
    CHECK(again == ids);

    REQUIRE(posix_trace_eventtypelist_rewind(trid) == 0);
    REQUIRE(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
    CHECK(unavailable == 0);
    REQUIRE_FALSE(ids.empty());
    CHECK(id == ids.front());

    CHECK(posix_trace_eventtypelist_getnext_id(trid, nullptr, &unavailable) == EINVAL);
    CHECK(posix_trace_eventtypelist_getnext_id(trid, &id, nullptr) == EINVAL);
}

TEST_CASE("eventid_get_name: exact names; EINVAL for an unnamed id or a NULL buffer",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t user = user_event("stream_api.named_user_event");

    const std::pair<trace_event_id_t, const char *> expected[] = {
        {POSIX_TRACE_START, "posix_trace_start"},
        {POSIX_TRACE_STOP, "posix_trace_stop"},
        {POSIX_TRACE_FILTER, "posix_trace_filter"},
        {POSIX_TRACE_OVERFLOW, "posix_trace_overflow"},
        {POSIX_TRACE_RESUME, "posix_trace_resume"},
        {POSIX_TRACE_ERROR, "posix_trace_error"},
        {POSIX_TRACE_FLUSH_START, "posix_trace_flush_start"},
        {POSIX_TRACE_FLUSH_STOP, "posix_trace_flush_stop"},
        {POSIX_TRACE_UNNAMED_USEREVENT, "posix_trace_unnamed_userevent"},
        {POSIX_TRACE_PROCESS_FORK, "process_fork"},
        {POSIX_TRACE_PROCESS_EXEC, "process_exec"},
        {POSIX_TRACE_PROCESS_EXIT, "process_exit"},
        {23, "td_create"},
        {user, "stream_api.named_user_event"},
    };
    for (const auto &[id, want] : expected) {
        CAPTURE(id);
        char name[TRACE_EVENT_NAME_MAX];
        std::memset(name, 'z', sizeof name);
        REQUIRE(posix_trace_eventid_get_name(trid, id, name) == 0);
        REQUIRE(std::memchr(name, '\0', sizeof name) != nullptr);
        CHECK(std::string(name) == want);
    }
    CHECK(POSIX_TRACE_UNNAMED_USER_EVENT == POSIX_TRACE_UNNAMED_USEREVENT);

    char name[TRACE_EVENT_NAME_MAX];
    CHECK(posix_trace_eventid_get_name(trid, 5000, name) == EINVAL);
    CHECK(posix_trace_eventid_get_name(trid, 11, name) == EINVAL);
    CHECK(posix_trace_eventid_get_name(trid, 30, name) == EINVAL);
    CHECK(posix_trace_eventid_get_name(trid, POSIX_TRACE_START, nullptr) == EINVAL);
}

TEST_CASE("trid_eventid_open and eventid_equal", "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();

    trace_event_id_t by_process = user_event("stream_api.shared_name");
    trace_event_id_t by_trid = 0;
    REQUIRE(posix_trace_trid_eventid_open(trid, "stream_api.shared_name", &by_trid) == 0);
    CHECK(by_trid == by_process);

    trace_event_id_t first = 0, second = 0;
    REQUIRE(posix_trace_trid_eventid_open(trid, "stream_api.trid_first", &first) == 0);
    CHECK(user_event("stream_api.trid_first") == first);
    REQUIRE(posix_trace_trid_eventid_open(trid, "stream_api.trid_first", &second) == 0);
    CHECK(second == first);
    CHECK(first != by_process);
    char name[TRACE_EVENT_NAME_MAX];
    REQUIRE(posix_trace_eventid_get_name(trid, first, name) == 0);
    CHECK(std::string(name) == "stream_api.trid_first");

    std::string longest(TRACE_EVENT_NAME_MAX - 1, 'n');
    trace_event_id_t id = 0;
    CHECK(posix_trace_trid_eventid_open(trid, longest.c_str(), &id) == 0);
    std::string too_long(TRACE_EVENT_NAME_MAX, 'l');
    CHECK(posix_trace_trid_eventid_open(trid, too_long.c_str(), &id) == ENAMETOOLONG);
    CHECK(posix_trace_eventid_open(too_long.c_str(), &id) == ENAMETOOLONG);
    CHECK(posix_trace_trid_eventid_open(trid, nullptr, &id) == EINVAL);
    CHECK(posix_trace_trid_eventid_open(trid, "stream_api.null_id", nullptr) == EINVAL);

    CHECK(posix_trace_eventid_equal(trid, first, first) != 0);
    CHECK(posix_trace_eventid_equal(trid, by_trid, by_process) != 0);
    CHECK(posix_trace_eventid_equal(trid, first, by_process) == 0);
    CHECK(posix_trace_eventid_equal(trid, POSIX_TRACE_START, POSIX_TRACE_START) != 0);
    CHECK(posix_trace_eventid_equal(trid, POSIX_TRACE_START, POSIX_TRACE_STOP) == 0);
}
