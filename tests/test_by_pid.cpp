// User events of another process, traced by pid: names it registered before
// and after the tracer attached, read from its published name table.
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <signal.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using test_support::helper_path;

// A process's table of names is read whole whenever one of its names is
// looked for: the names read are the stream's to keep once the process is
// gone, though only one was asked for while it lived.
TEST_CASE("by pid: names read from a process's memory stay known after it exits", "[bypid]")
{
    test_support::ChildConversation emitter({helper_path("user_event_emitter"), "two"});
    REQUIRE(emitter.read_line() == "ready\n");
    trace_id_t trid;
    REQUIRE(posix_trace_create(emitter.pid(), nullptr, &trid) == 0);
    char name[TRACE_EVENT_NAME_MAX] = {};
    REQUIRE(posix_trace_eventid_get_name(trid, POSIX_TRACE_USER_EVENT_FIRST, name) == 0);
    CHECK(std::string(name) == "emitter.before");
    emitter.say("go\n");
    REQUIRE(emitter.read_line() == "done\n");
    emitter.say("bye\n");
    int status = 0;
    REQUIRE(waitpid(emitter.pid(), &status, 0) == emitter.pid());
    REQUIRE(posix_trace_eventid_get_name(trid, POSIX_TRACE_USER_EVENT_FIRST + 1, name) == 0);
    CHECK(std::string(name) == "emitter.early");
    REQUIRE(posix_trace_shutdown(trid) == 0);
}

TEST_CASE("by pid: user events of a process linked with libposixtrace, with their names", "[bypid]")
{
    test_support::ChildConversation emitter({helper_path("user_event_emitter")});
    REQUIRE(emitter.read_line() == "ready\n");

    trace_id_t trid;
    REQUIRE(posix_trace_create(emitter.pid(), nullptr, &trid) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    emitter.say("go\n");
    REQUIRE(emitter.read_line() == "done\n");
    REQUIRE(posix_trace_stop(trid) == 0);

    std::map<std::string, std::string> payload_of;
    for (;;) {
        posix_trace_event_info info;
        char data[64] = {};
        size_t len = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_trygetnext_event(trid, &info, data, sizeof data, &len, &unavailable) ==
                0);
        if (unavailable)
            break;
        if (info.posix_event_id < POSIX_TRACE_USER_EVENT_FIRST)
            continue;
        char name[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(trid, info.posix_event_id, name) == 0);
        CHECK(info.posix_pid == emitter.pid());
        CHECK(info.posix_tid == emitter.pid());
        payload_of[name] = std::string(data, len ? len - 1 : 0);
    }
    CHECK(payload_of == std::map<std::string, std::string>{{"emitter.before", "first payload"},
                                                           {"emitter.after", "second payload"}});

    // Both names are event types of the stream; ids are the process's own.
    std::vector<std::string> user_types;
    for (;;) {
        trace_event_id_t id;
        int unavailable = 0;
        REQUIRE(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
        if (unavailable)
            break;
        char name[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(trid, id, name) == 0);
        if (id >= POSIX_TRACE_USER_EVENT_FIRST && id < POSIX_TRACE_USDT_EVENT_FIRST)
            user_types.push_back(name);
    }
    CHECK(user_types == std::vector<std::string>{"emitter.before", "emitter.after"});
    trace_event_id_t id = 0;
    REQUIRE(posix_trace_trid_eventid_open(trid, "emitter.after", &id) == 0);
    CHECK(id == POSIX_TRACE_USER_EVENT_FIRST + 1);
    REQUIRE(posix_trace_trid_eventid_open(trid, "never.registered", &id) == 0);
    CHECK(id == POSIX_TRACE_UNNAMED_USEREVENT);
    emitter.say("bye\n");
    REQUIRE(posix_trace_shutdown(trid) == 0);
}
