// A trace log opened while its stream still writes it: the reader reads on
// as the log grows, up to its trailer, and the reader of a log whose blocks
// the writer rewrites (LOOP) keeps the end it met.
#include <catch2/catch.hpp>
#include <trace.h>

#include <vector>

#include "log_support.hpp"

using namespace test_support;

namespace {

// posix_trace_flush, then until the log writer is done with it.
void flush_and_wait(trace_id_t trid)
{
    REQUIRE(posix_trace_flush(trid) == 0);
    INFO("the flush did not end in 5 s");
    REQUIRE(flush_ended(status_when(trid, flush_ended)));
}

size_t count_of(const std::vector<Event> &events, trace_event_id_t id)
{
    return user_events_of(events, id).size();
}

// A started FLUSH stream of this process with a log of `log_policy` on
// `file`, and the id of the event `name`.
StreamGuard started_with_log(const TempFile &file, int log_policy, const char *name,
                             trace_event_id_t &id)
{
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_FLUSH);
    posix_trace_attr_setlogfullpolicy(&attr, log_policy);
    posix_trace_attr_setlogsize(&attr, 16u << 20);
    StreamGuard stream = make_logged_stream(file.fd(), &attr);
    REQUIRE(posix_trace_eventid_open(name, &id) == 0);
    REQUIRE(posix_trace_start(stream.get()) == 0);
    return stream;
}

void emit(trace_event_id_t id, int count)
{
    for (int i = 0; i < count; ++i)
        posix_trace_event(id, &i, sizeof i);
}

} // namespace

// An UNTIL_FULL log is written in time order whichever path the user events
// take (an APPEND log of a FLUSH stream of the process's own lanes holds
// their runs, which overlap: a follower of one keeps the end it met).
TEST_CASE("log: a reader at the end of a log still being written reads on as it grows",
          "[log][self-tracing]")
{
    TempFile file;
    trace_event_id_t id;
    StreamGuard stream = started_with_log(file, POSIX_TRACE_UNTIL_FULL, "follow.event", id);
    emit(id, 10);
    flush_and_wait(stream.get());

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead first = read_log(log.get());
    CHECK(first.error == 0);
    CHECK(count_of(first.events, id) == 10);
    CHECK(read_log(log.get()).events.empty()); // nothing new: the end, for now

    emit(id, 25);
    flush_and_wait(stream.get());
    LogRead second = read_log(log.get());
    CHECK(second.error == 0);
    CHECK(count_of(second.events, id) == 25);
    for (const Event &event : user_events_of(second.events, id))
        CHECK(event.info.posix_timestamp.tv_sec * 1'000'000'000L +
                  event.info.posix_timestamp.tv_nsec >=
              first.events.back().info.posix_timestamp.tv_sec * 1'000'000'000L +
                  first.events.back().info.posix_timestamp.tv_nsec);

    emit(id, 5);
    REQUIRE(stream.shutdown() == 0); // the rest, then the trailer
    LogRead last = read_log(log.get());
    CHECK(last.error == 0);
    CHECK(count_of(last.events, id) == 5);
    CHECK(read_log(log.get()).events.empty());

    // Read whole, the log holds what the follower read, in that order.
    LogGuard whole(file.path());
    REQUIRE(whole.open_error() == 0);
    std::vector<Event> all = read_log(whole.get()).events;
    std::vector<Event> followed = first.events;
    followed.insert(followed.end(), second.events.begin(), second.events.end());
    followed.insert(followed.end(), last.events.begin(), last.events.end());
    REQUIRE(all.size() == followed.size());
    for (size_t i = 0; i < all.size(); ++i)
        CHECK(same_event(all[i], followed[i]));
}

TEST_CASE("log: a LOOP log's reader keeps the end it met while the log is rewritten",
          "[log][self-tracing]")
{
    TempFile file;
    trace_event_id_t id;
    StreamGuard stream = started_with_log(file, POSIX_TRACE_LOOP, "follow.loop", id);
    emit(id, 10);
    flush_and_wait(stream.get());
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    CHECK(count_of(read_log(log.get()).events, id) == 10);
    emit(id, 10);
    flush_and_wait(stream.get());
    CHECK(read_log(log.get()).events.empty());
}
