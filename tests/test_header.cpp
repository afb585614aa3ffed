// <trace.h> itself: every symbolic constant of a group is distinct, and the
// limits are at or above what POSIX requires; the thread event types carry
// the names the installed headers promise.
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <trace.h>

#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace test_support;

namespace {

template <typename T> bool all_distinct(std::initializer_list<T> values)
{
    return std::set<T>(values).size() == values.size();
}

} // namespace

TEST_CASE("trace.h: the constants of each group are distinct", "[header][self-tracing]")
{
    CHECK(all_distinct({POSIX_TRACE_RUNNING, POSIX_TRACE_SUSPENDED}));
    CHECK(all_distinct({POSIX_TRACE_FULL, POSIX_TRACE_NOT_FULL}));
    CHECK(all_distinct({POSIX_TRACE_OVERRUN, POSIX_TRACE_NO_OVERRUN}));
    CHECK(all_distinct({POSIX_TRACE_FLUSHING, POSIX_TRACE_NOT_FLUSHING}));
    CHECK(all_distinct(
        {POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_FLUSH, POSIX_TRACE_APPEND}));
    CHECK(all_distinct({POSIX_TRACE_CLOSE_FOR_CHILD, POSIX_TRACE_INHERITED}));
    CHECK(all_distinct(
        {POSIX_TRACE_NOT_TRUNCATED, POSIX_TRACE_TRUNCATED_RECORD, POSIX_TRACE_TRUNCATED_READ}));
    CHECK(all_distinct(
        {POSIX_TRACE_WOPID_EVENTS, POSIX_TRACE_SYSTEM_EVENTS, POSIX_TRACE_ALL_EVENTS}));
    CHECK(all_distinct(
        {POSIX_TRACE_SET_EVENTSET, POSIX_TRACE_ADD_EVENTSET, POSIX_TRACE_SUB_EVENTSET}));
    CHECK(
        all_distinct({POSIX_TRACE_START, POSIX_TRACE_STOP, POSIX_TRACE_FILTER, POSIX_TRACE_OVERFLOW,
                      POSIX_TRACE_RESUME, POSIX_TRACE_ERROR, POSIX_TRACE_FLUSH_START,
                      POSIX_TRACE_FLUSH_STOP, POSIX_TRACE_UNNAMED_USEREVENT}));
}

TEST_CASE("trace.h: limits at or above the POSIX minimums", "[header][self-tracing]")
{
    STATIC_REQUIRE(_POSIX_TRACE_EVENT_NAME_MAX == 30);
    STATIC_REQUIRE(_POSIX_TRACE_NAME_MAX == 8);
    STATIC_REQUIRE(_POSIX_TRACE_SYS_MAX == 8);
    STATIC_REQUIRE(_POSIX_TRACE_USER_EVENT_MAX == 32);
    STATIC_REQUIRE(TRACE_EVENT_NAME_MAX >= _POSIX_TRACE_EVENT_NAME_MAX);
    STATIC_REQUIRE(TRACE_NAME_MAX >= _POSIX_TRACE_NAME_MAX);
    STATIC_REQUIRE(TRACE_SYS_MAX >= _POSIX_TRACE_SYS_MAX);
    STATIC_REQUIRE(TRACE_USER_EVENT_MAX >= _POSIX_TRACE_USER_EVENT_MAX);
    // Our own limits, as installed.
    STATIC_REQUIRE(TRACE_EVENT_NAME_MAX == 128);
    STATIC_REQUIRE(TRACE_NAME_MAX == 64);
    STATIC_REQUIRE(TRACE_USER_EVENT_MAX == 1024);
    STATIC_REQUIRE(TRACE_SYS_MAX == 16);
}

TEST_CASE("thread event types 16 to 29 are td_ready ... td_timeout",
          "[header][thread_events][self-tracing]")
{
    const std::vector<std::string> names = {
        "td_ready",       "td_sleep", "td_switchto",    "td_switchfrom", "td_lock_try",
        "td_catchsig",    "td_idle",  "td_create",      "td_death",      "td_preempt",
        "td_pri_inherit", "td_reap",  "td_concurrency", "td_timeout"};
    REQUIRE(names.size() == POSIX_TRACE_TD_EVENT_COUNT);
    StreamGuard stream = make_stream();
    for (size_t i = 0; i < names.size(); ++i) {
        trace_event_id_t id = POSIX_TRACE_TD_EVENT_FIRST + trace_event_id_t(i);
        CAPTURE(id);
        char name[TRACE_EVENT_NAME_MAX] = {};
        REQUIRE(posix_trace_eventid_get_name(stream.get(), id, name) == 0);
        CHECK(std::string(name) == names[i]);
    }
    CHECK(POSIX_TRACE_TD_EVENT_FIRST == 16);
}

TEST_CASE("POSIX_TRACE_TD_EVENT_ID and _OF turn TD events into ids and back",
          "[header][self-tracing]")
{
    for (int n = TD_MIN_EVENT_NUM; n <= TD_MAX_EVENT_NUM; ++n) {
        CAPTURE(n);
        CHECK(POSIX_TRACE_TD_EVENT_ID(n) == trace_event_id_t(15 + n));
        CHECK(POSIX_TRACE_TD_EVENT_OF(POSIX_TRACE_TD_EVENT_ID(n)) == td_event_e(n));
    }
    for (trace_event_id_t id : {0u, 15u, 30u, 31u, 32u, 2048u, UINT32_MAX})
        CHECK(POSIX_TRACE_TD_EVENT_OF(id) == TD_ALL_EVENTS);
}
