// Event sets and user event type ids (no stream needed).
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>

namespace {

std::set<trace_event_id_t> members(const trace_event_set_t &set)
{
    std::set<trace_event_id_t> ids;
    for (trace_event_id_t id = 0; id < POSIX_TRACE_EVENT_ID_LIMIT; ++id) {
        int is = -1;
        REQUIRE(posix_trace_eventset_ismember(id, &set, &is) == 0);
        if (is)
            ids.insert(id);
    }
    return ids;
}

} // namespace

TEST_CASE("eventset: fill covers exactly the documented classes", "[eventset]")
{
    trace_event_set_t set;
    REQUIRE(posix_trace_eventset_fill(&set, POSIX_TRACE_WOPID_EVENTS) == 0);
    std::set<trace_event_id_t> wopid = members(set);
    CHECK(wopid == std::set<trace_event_id_t>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(wopid.count(POSIX_TRACE_START));
    CHECK(wopid.count(POSIX_TRACE_FLUSH_STOP));

    REQUIRE(posix_trace_eventset_fill(&set, POSIX_TRACE_SYSTEM_EVENTS) == 0);
    std::set<trace_event_id_t> expected = wopid;
    for (trace_event_id_t id = 0; id < POSIX_TRACE_TD_EVENT_COUNT; ++id)
        expected.insert(POSIX_TRACE_TD_EVENT_FIRST + id);
    for (trace_event_id_t id : {POSIX_TRACE_PROCESS_FORK, POSIX_TRACE_PROCESS_EXEC, POSIX_TRACE_PROCESS_EXIT})
        expected.insert(id);
    CHECK(members(set) == expected);

    REQUIRE(posix_trace_eventset_fill(&set, POSIX_TRACE_ALL_EVENTS) == 0);
    CHECK(members(set).size() == POSIX_TRACE_EVENT_ID_LIMIT);

    REQUIRE(posix_trace_eventset_empty(&set) == 0);
    CHECK(members(set).empty());
}

TEST_CASE("eventset: add, del and ismember", "[eventset]")
{
    trace_event_set_t set;
    REQUIRE(posix_trace_eventset_empty(&set) == 0);
    REQUIRE(posix_trace_eventset_add(40, &set) == 0);
    REQUIRE(posix_trace_eventset_add(40, &set) == 0); // already there: no error
    REQUIRE(posix_trace_eventset_add(POSIX_TRACE_EVENT_ID_LIMIT - 1, &set) == 0);
    CHECK(members(set) == std::set<trace_event_id_t>{40, POSIX_TRACE_EVENT_ID_LIMIT - 1});
    REQUIRE(posix_trace_eventset_del(40, &set) == 0);
    REQUIRE(posix_trace_eventset_del(41, &set) == 0); // absent: no error
    CHECK(members(set) == std::set<trace_event_id_t>{POSIX_TRACE_EVENT_ID_LIMIT - 1});
}

TEST_CASE("eventset: invalid arguments give EINVAL", "[eventset]")
{
    trace_event_set_t set;
    int is = 0;
    REQUIRE(posix_trace_eventset_empty(&set) == 0);
    CHECK(posix_trace_eventset_empty(nullptr) == EINVAL);
    CHECK(posix_trace_eventset_fill(nullptr, POSIX_TRACE_ALL_EVENTS) == EINVAL);
    CHECK(posix_trace_eventset_fill(&set, 0) == EINVAL);
    CHECK(posix_trace_eventset_fill(&set, 77) == EINVAL);
    CHECK(posix_trace_eventset_add(1, nullptr) == EINVAL);
    CHECK(posix_trace_eventset_del(1, nullptr) == EINVAL);
    CHECK(posix_trace_eventset_ismember(1, nullptr, &is) == EINVAL);
    CHECK(posix_trace_eventset_ismember(1, &set, nullptr) == EINVAL);
    CHECK(posix_trace_eventset_add(POSIX_TRACE_EVENT_ID_LIMIT, &set) == EINVAL);
    CHECK(posix_trace_eventset_del(POSIX_TRACE_EVENT_ID_LIMIT, &set) == EINVAL);
    CHECK(posix_trace_eventset_ismember(POSIX_TRACE_EVENT_ID_LIMIT, &set, &is) == EINVAL);
    CHECK(members(set).empty()); // nothing changed
}

TEST_CASE("eventid: open maps one name to one id", "[eventid]")
{
    trace_event_id_t a1, a2, b;
    REQUIRE(posix_trace_eventid_open("eventid.test.a", &a1) == 0);
    REQUIRE(posix_trace_eventid_open("eventid.test.a", &a2) == 0);
    REQUIRE(posix_trace_eventid_open("eventid.test.b", &b) == 0);
    CHECK(a1 == a2);
    CHECK(a1 != b);
    for (trace_event_id_t id : {a1, b}) {
        CHECK(id >= POSIX_TRACE_USER_EVENT_FIRST);
        CHECK(id < POSIX_TRACE_EVENT_ID_LIMIT);
    }
    CHECK(posix_trace_eventid_equal(0, a1, a2) != 0);
    CHECK(posix_trace_eventid_equal(0, a1, b) == 0);
}

TEST_CASE("eventid: name length and argument errors", "[eventid]")
{
    trace_event_id_t id;
    std::string longest(TRACE_EVENT_NAME_MAX - 1, 'l');
    CHECK(posix_trace_eventid_open(longest.c_str(), &id) == 0);
    std::string too_long(TRACE_EVENT_NAME_MAX, 'l');
    CHECK(posix_trace_eventid_open(too_long.c_str(), &id) == ENAMETOOLONG);
    CHECK(posix_trace_eventid_open(nullptr, &id) == EINVAL);
    CHECK(posix_trace_eventid_open("x", nullptr) == EINVAL);
}

TEST_CASE("eventid: past TRACE_USER_EVENT_MAX names, the unnamed user event", "[eventid]")
{
    // In a child: the registry is per process and shared by the other tests.
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        trace_event_id_t first, id;
        if (posix_trace_eventid_open("unnamed.first", &first) != 0)
            _exit(1);
        for (int i = 0; i < TRACE_USER_EVENT_MAX + 5; ++i)
            if (posix_trace_eventid_open(("unnamed." + std::to_string(i)).c_str(), &id) != 0)
                _exit(2);
        if (id != POSIX_TRACE_UNNAMED_USEREVENT)
            _exit(3);
        if (posix_trace_eventid_open("unnamed.another", &id) != 0 ||
            id != POSIX_TRACE_UNNAMED_USEREVENT)
            _exit(4);
        trace_event_id_t again;
        if (posix_trace_eventid_open("unnamed.first", &again) != 0 || again != first)
            _exit(5);
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
