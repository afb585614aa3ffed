// Rules of the standard about streams that no other test file states:
// what outlives an attributes object, what a clear keeps, what a read of a
// stream with log takes away, the room stream-min-size guarantees, posix_spawn
// and the calls with nothing to trace.
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <spawn.h>
#include <sys/wait.h>
#include <trace.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "log_support.hpp"
#include "test_support.hpp"

using namespace test_support;

namespace {

std::vector<Event> user_events_in(const std::vector<Event> &events)
{
    std::vector<Event> user;
    for (const Event &event : events)
        if (event.info.posix_event_id >= POSIX_TRACE_USER_EVENT_FIRST)
            user.push_back(event);
    return user;
}

int number_of(const Event &event)
{
    int number = -1;
    REQUIRE(event.data.size() == sizeof number);
    std::memcpy(&number, event.data.data(), sizeof number);
    return number;
}

std::vector<std::string> event_type_names(trace_id_t trid)
{
    REQUIRE(posix_trace_eventtypelist_rewind(trid) == 0);
    std::vector<std::string> names;
    for (;;) {
        trace_event_id_t id = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
        if (unavailable)
            return names;
        char name[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(trid, id, name) == 0);
        names.push_back(std::to_string(id) + "=" + name);
    }
}

} // namespace

TEST_CASE("destroying the attributes object leaves the stream made from it as it was",
          "[stream][self-tracing]")
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    REQUIRE(posix_trace_attr_setname(&attr, "outlives-attr") == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 256 * 1024) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_UNTIL_FULL) == 0);
    StreamGuard stream = make_stream(&attr);
    REQUIRE(posix_trace_attr_destroy(&attr) == 0);

    trace_attr_t got;
    REQUIRE(posix_trace_get_attr(stream.get(), &got) == 0);
    char name[TRACE_NAME_MAX];
    REQUIRE(posix_trace_attr_getname(&got, name) == 0);
    CHECK(std::string(name) == "outlives-attr");
    size_t size = 0;
    REQUIRE(posix_trace_attr_getstreamsize(&got, &size) == 0);
    CHECK(size == 256 * 1024);
    int policy = 0;
    REQUIRE(posix_trace_attr_getstreamfullpolicy(&got, &policy) == 0);
    CHECK(policy == POSIX_TRACE_UNTIL_FULL);
    posix_trace_attr_destroy(&got);

    filter_thread_events(stream.get());
    trace_event_id_t id = user_event("rules.after_destroy");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    int one = 1;
    posix_trace_event(id, &one, sizeof one);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    CHECK(user_events_in(read_available(stream.get())).size() == 1);
}

TEST_CASE("posix_trace_event with no stream tracing the process records nothing anywhere",
          "[stream][self-tracing]")
{
    trace_event_id_t id = user_event("rules.untraced");
    for (int i = 0; i < 100; ++i)
        posix_trace_event(id, &i, sizeof i); // no stream: nothing happens
    StreamGuard stream = make_stream();
    filter_thread_events(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    int traced = 1000;
    posix_trace_event(id, &traced, sizeof traced);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    std::vector<Event> user = user_events_in(read_available(stream.get()));
    REQUIRE(user.size() == 1);
    CHECK(number_of(user[0]) == 1000);
}

TEST_CASE("eventid_get_name gives the same name at every call", "[stream][self-tracing]")
{
    StreamGuard stream = make_stream();
    trace_event_id_t id = user_event("rules.same_name");
    for (trace_event_id_t asked :
         {id, trace_event_id_t(POSIX_TRACE_START), trace_event_id_t(POSIX_TRACE_TD_EVENT_FIRST)}) {
        char first[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(stream.get(), asked, first) == 0);
        for (int call = 0; call < 5; ++call) {
            char again[TRACE_EVENT_NAME_MAX];
            std::memset(again, 'x', sizeof again);
            REQUIRE(posix_trace_eventid_get_name(stream.get(), asked, again) == 0);
            CHECK(std::string(again) == std::string(first));
        }
    }
}

TEST_CASE("clear keeps the event types, their names and the filter", "[stream][self-tracing]")
{
    StreamGuard stream = make_stream();
    trace_event_id_t kept = user_event("rules.clear_kept");
    trace_event_id_t filtered = user_event("rules.clear_filtered");
    trace_event_set_t set;
    posix_trace_eventset_empty(&set);
    posix_trace_eventset_add(filtered, &set);
    REQUIRE(posix_trace_set_filter(stream.get(), &set, POSIX_TRACE_SET_EVENTSET) == 0);
    std::vector<std::string> types_before = event_type_names(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    for (int i = 0; i < 10; ++i) {
        posix_trace_event(kept, &i, sizeof i);
        posix_trace_event(filtered, &i, sizeof i);
    }

    REQUIRE(posix_trace_clear(stream.get()) == 0);
    CHECK(event_type_names(stream.get()) == types_before);
    trace_event_set_t after;
    REQUIRE(posix_trace_get_filter(stream.get(), &after) == 0);
    int member = -1;
    REQUIRE(posix_trace_eventset_ismember(filtered, &after, &member) == 0);
    CHECK(member != 0);
    REQUIRE(posix_trace_eventset_ismember(kept, &after, &member) == 0);
    CHECK(member == 0);

    int number = 42;
    posix_trace_event(kept, &number, sizeof number);
    posix_trace_event(filtered, &number, sizeof number);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    std::vector<Event> user = user_events_in(read_available(stream.get(), false));
    REQUIRE(user.size() == 1);
    CHECK(user[0].info.posix_event_id == kept);
    CHECK(number_of(user[0]) == 42);
}

TEST_CASE("timedgetnext with an abstime already past returns the event that is ready",
          "[stream][self-tracing]")
{
    StreamGuard stream = make_stream();
    filter_thread_events(stream.get());
    trace_event_id_t id = user_event("rules.ready");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    int number = 7;
    posix_trace_event(id, &number, sizeof number);
    REQUIRE(posix_trace_stop(stream.get()) == 0); // every event is readable now
    timespec past = realtime_in(-1'000'000'000);
    ReadResult first = get_next(stream.get(), GetNext::Timed, &past);
    CHECK(first.err == 0);
    CHECK(first.unavailable == 0);
    CHECK(first.info.posix_event_id == POSIX_TRACE_START);
    ReadResult second = get_next(stream.get(), GetNext::Timed, &past);
    CHECK(second.err == 0);
    CHECK(second.info.posix_event_id == id);
}

TEST_CASE("an event read from a stream with log is taken out of it: the log never has it",
          "[log][self-tracing]")
{
    TempFile file;
    Attr a;
    StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
    trace_event_id_t id = user_event("rules.read_from_stream");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    for (int i = 0; i < 10; ++i)
        posix_trace_event(id, &i, sizeof i);
    // The reader takes events up to the first user event (number 0).
    std::vector<unsigned char> buffer(kReadBufferBytes);
    for (int guard = 0;; ++guard) {
        REQUIRE(guard < 10000);
        posix_trace_event_info info{};
        size_t length = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_getnext_event(stream.get(), &info, buffer.data(), buffer.size(),
                                          &length, &unavailable) == 0);
        if (info.posix_event_id == id)
            break;
    }
    REQUIRE(stream.shutdown() == 0);

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    REQUIRE(read.error == 0);
    std::vector<Event> user = user_events_of(read.events, id);
    REQUIRE(user.size() == 9);
    for (int i = 0; i < 9; ++i)
        CHECK(number_of(user[size_t(i)]) == i + 1);
    CHECK(user_events_of(read.events, POSIX_TRACE_START).empty()); // read before it
}

TEST_CASE("events whose max sizes add up to stream-min-size are all recorded, whatever the policy",
          "[stream][self-tracing]")
{
    int policy = GENERATE(POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_FLUSH);
    INFO("stream full policy " << policy);
    const size_t stream_size = 64 * 1024;
    Attr a;
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, stream_size) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, policy) == 0);
    size_t user_size = 0, system_size = 0;
    REQUIRE(posix_trace_attr_getmaxusereventsize(&a.attr, sizeof(int), &user_size) == 0);
    REQUIRE(posix_trace_attr_getmaxsystemeventsize(&a.attr, &system_size) == 0);
    // The set: the start event, the user events, the stop event.
    const int count = int((stream_size - 2 * system_size) / user_size);
    REQUIRE(2 * system_size + size_t(count) * user_size <= stream_size);

    TempFile file; // the log of the FLUSH stream, which never needs it here
    StreamGuard stream =
        policy == POSIX_TRACE_FLUSH ? make_logged_stream(file.fd(), &a.attr) : make_stream(&a.attr);
    filter_thread_events(stream.get());
    trace_event_id_t id = user_event("rules.exact_fit");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    for (int i = 0; i < count; ++i)
        posix_trace_event(id, &i, sizeof i);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::vector<Event> events = read_available(stream.get());
    auto ids = ids_of(events);
    CHECK(std::count(ids.begin(), ids.end(), POSIX_TRACE_OVERFLOW) == 0);
    std::vector<Event> user = user_events_in(events);
    REQUIRE(user.size() == size_t(count));
    for (int i = 0; i < count; ++i)
        REQUIRE(number_of(user[size_t(i)]) == i);
    CHECK(ids.front() == POSIX_TRACE_START);
    CHECK(ids.back() == POSIX_TRACE_STOP);
    posix_trace_status_info status{};
    REQUIRE(posix_trace_get_status(stream.get(), &status) == 0);
    CHECK(status.posix_stream_overrun_status == POSIX_TRACE_NO_OVERRUN);
}

TEST_CASE("posix_spawn follows the inheritance policy as fork does",
          "[stream][inherit][self-tracing]")
{
    int inheritance = GENERATE(POSIX_TRACE_INHERITED, POSIX_TRACE_CLOSE_FOR_CHILD);
    INFO((inheritance == POSIX_TRACE_INHERITED ? "INHERITED" : "CLOSE_FOR_CHILD"));
    Attr a;
    REQUIRE(posix_trace_attr_setinherited(&a.attr, inheritance) == 0);
    StreamGuard stream = make_stream(&a.attr);
    filter_thread_events(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    std::string helper = helper_path("late_names"); // 9 user events after 0.2 s
    char *argv[] = {helper.data(), nullptr};
    pid_t child = 0;
    REQUIRE(posix_spawn(&child, helper.c_str(), nullptr, nullptr, argv, environ) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    size_t from_child = 0;
    for (const Event &event : user_events_in(read_available(stream.get())))
        from_child += event.info.posix_pid == child;
    CHECK(from_child == (inheritance == POSIX_TRACE_INHERITED ? 9u : 0u));
}

// A child traced by inheritance is traced from its first instruction: one
// that emits at once after fork() and ends has its event in the stream,
// every time, whether it ends with _exit or with exit (its atexit work).
TEST_CASE("INHERITED: a child that emits at once after fork and ends is in the stream",
          "[stream][inherit][self-tracing]")
{
    constexpr int kChildren = 1'000;
    Attr a;
    REQUIRE(posix_trace_attr_setinherited(&a.attr, POSIX_TRACE_INHERITED) == 0);
    StreamGuard stream = make_stream(&a.attr);
    filter_thread_events(stream.get());
    trace_event_id_t hello = user_event("child.hello");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    std::vector<pid_t> children;
    for (int i = 0; i < kChildren; ++i) {
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            posix_trace_event(hello, &i, sizeof i);
            if (i % 50 == 1) // a few: under LeakSanitizer each exit() checks the whole process
                exit(0);
            _exit(0);
        }
        int status = 0;
        REQUIRE(waitpid(child, &status, 0) == child);
        REQUIRE(WIFEXITED(status));
        children.push_back(child);
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    std::vector<int> said(kChildren, 0);
    for (const Event &event : user_events_in(read_available(stream.get()))) {
        REQUIRE(event.info.posix_event_id == hello);
        int i = number_of(event);
        REQUIRE((i >= 0 && i < kChildren));
        CHECK(event.info.posix_pid == children[size_t(i)]);
        ++said[size_t(i)];
    }
    CHECK(std::count(said.begin(), said.end(), 1) == kChildren);
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(stream.get(), &counters) == 0);
    CHECK(counters.lost_in_kernel + counters.lost_in_stream == 0);
}
