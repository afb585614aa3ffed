// A trace log opened while its stream still writes it: the reader reads on
// as the log grows, up to its trailer, and the reader of a log whose blocks
// the writer rewrites (LOOP) keeps the end it met.
#include <catch2/catch.hpp>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
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

// The writer's bytes reach the file a few at a time, cutting block headers
// and payloads anywhere; then the file is cut back under the reader and
// written over, as a process that can write the file might.
TEST_CASE("log: a log that grows a few bytes at a time is read once, in order; one written over "
          "under its reader stops with EINVAL",
          "[log][self-tracing]")
{
    TempFile file;
    trace_event_id_t id;
    StreamGuard stream = started_with_log(file, POSIX_TRACE_UNTIL_FULL, "follow.bytes", id);
    for (size_t i = 0; i < 300; ++i) {
        std::vector<unsigned char> payload = numbered_payload(i);
        posix_trace_event(id, payload.data(), payload.size());
        if (i % 100 == 99)
            flush_and_wait(stream.get()); // a block each time
    }
    REQUIRE(stream.shutdown() == 0);
    std::vector<unsigned char> bytes = file.bytes();
    LogGuard closed(file.path());
    std::vector<Event> expected = read_log(closed.get()).events;
    REQUIRE(count_of(expected, id) == 300);
    uint64_t data_offset = 0; // where the header ends: after the magic and three fields
    std::memcpy(&data_offset, bytes.data() + 16, sizeof data_offset);
    REQUIRE(data_offset < bytes.size());

    TempFile growing;
    int to = growing.fd();
    auto append = [&](const unsigned char *from, size_t length) {
        REQUIRE(write(to, from, length) == ssize_t(length));
    };
    append(bytes.data(), data_offset);
    LogGuard log(growing.path());
    REQUIRE(log.open_error() == 0);
    std::vector<Event> followed;
    for (size_t at = data_offset; at < bytes.size();) {
        size_t step = std::min<size_t>(bytes.size() - at, 1 + (at * 7919) % 3000);
        append(bytes.data() + at, step);
        at += step;
        LogRead more = read_log(log.get());
        REQUIRE(more.error == 0);
        followed.insert(followed.end(), more.events.begin(), more.events.end());
    }
    REQUIRE(followed.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
        CHECK(same_event(followed[i], expected[i]));

    TempFile rewritten;
    to = rewritten.fd();
    append(bytes.data(), bytes.size() / 2);
    LogGuard cut(rewritten.path());
    REQUIRE(cut.open_error() == 0);
    size_t before = read_log(cut.get()).events.size();
    REQUIRE(before > 0);
    REQUIRE(before < expected.size());
    REQUIRE(ftruncate(rewritten.fd(), off_t(data_offset)) == 0);
    CHECK(read_log(cut.get()).events.empty()); // shorter: nothing new
    REQUIRE(lseek(rewritten.fd(), 0, SEEK_END) == off_t(data_offset));
    std::vector<unsigned char> other(bytes.size(), 0x5a);
    append(other.data(), other.size());
    LogRead after = read_log(cut.get());
    CHECK(after.error == EINVAL);
    CHECK(after.events.empty());
}
