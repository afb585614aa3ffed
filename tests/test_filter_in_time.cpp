// A filter change applies to each event by its timestamp, not by when the
// stream delivers it: the events of an exec'd image, whose ids the stream
// translates to its own, are judged by the filter in force when they were
// made, like every other event.
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "test_support.hpp"

using namespace test_support;

namespace {

int int_of(const Event &event)
{
    int value = -1;
    if (event.data.size() == sizeof value)
        std::memcpy(&value, event.data.data(), sizeof value);
    return value;
}

} // namespace

TEST_CASE("filter: an exec'd image's events are filtered by the filter in force when made",
          "[stream][inherit][self-tracing]")
{
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    REQUIRE(posix_trace_attr_setinherited(&attr, POSIX_TRACE_INHERITED) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 64 << 20) == 0);
    StreamGuard stream = make_stream(&attr);
    posix_trace_attr_destroy(&attr);
    filter_thread_events(stream.get());
    // The image's own ids (32, 33) differ from the stream's for the same
    // names, so the kernel cannot filter them at the source.
    for (int i = 0; i < 4; ++i)
        user_event(("pair.pad" + std::to_string(i)).c_str());
    trace_event_id_t foo = user_event("pair.foo"), bar = user_event("pair.bar");
    REQUIRE(foo > 33);
    REQUIRE(posix_trace_start(stream.get()) == 0);

    std::string program = helper_path("paired_events");
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        execl(program.c_str(), program.c_str(), "200000", static_cast<char *>(nullptr));
        _exit(127);
    }
    trace_event_set_t just_foo;
    posix_trace_eventset_empty(&just_foo);
    posix_trace_eventset_add(foo, &just_foo);
    int status = 0, how = POSIX_TRACE_ADD_EVENTSET;
    size_t changes = 0;
    while (waitpid(child, &status, WNOHANG) == 0) {
        REQUIRE(posix_trace_set_filter(stream.get(), &just_foo, how) == 0);
        ++changes;
        how = how == POSIX_TRACE_ADD_EVENTSET ? POSIX_TRACE_SUB_EVENTSET : POSIX_TRACE_ADD_EVENTSET;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    // bar i is made just after foo i, and never filtered: when no filter
    // change and no loss report lies between bar i-1 and bar i, foo i was
    // made under the filter in force there, and is present exactly if that
    // filter admits it.
    bool foo_admitted = true, settled = false;
    std::map<int, bool> foo_seen;
    std::map<int, bool> judged; // i -> foo i admitted by the filter of its time
    size_t filter_events = 0;
    for (const Event &event : read_available(stream.get())) {
        trace_event_id_t id = event.info.posix_event_id;
        if (id == POSIX_TRACE_FILTER || id == POSIX_TRACE_OVERFLOW) {
            if (id == POSIX_TRACE_FILTER) {
                ++filter_events;
                posix_trace_filter_data change;
                REQUIRE(event.data.size() == sizeof change);
                std::memcpy(&change, event.data.data(), sizeof change);
                int member = 0;
                posix_trace_eventset_ismember(foo, &change.new_filter, &member);
                foo_admitted = !member;
            }
            settled = false;
        } else if (event.info.posix_pid == child && id == foo) {
            foo_seen[int_of(event)] = true;
        } else if (event.info.posix_pid == child && id == bar) {
            if (settled)
                judged[int_of(event)] = foo_admitted;
            settled = true;
        }
    }
    size_t admitted = 0, excluded = 0, wrong = 0;
    for (const auto &[i, should_be_there] : judged) {
        (should_be_there ? admitted : excluded)++;
        wrong += foo_seen.count(i) != should_be_there;
    }
    INFO(admitted << " foo admitted when made, " << excluded << " excluded");
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CAPTURE(losses.ring_full, losses.overwritten, losses.refused, losses.runs_skipped);
    CHECK(filter_events == changes); // the judgement saw every change
    CHECK(admitted > 1000);
    CHECK(excluded > 1000);
    CHECK(wrong == 0);
}
