// What a stream keeps of a burst depends on its size and its full policy
// alone, not on how fast the drain keeps up: the emitting thread here keeps
// the drain from running until the burst is over (DrainStarved), so every
// event waits in the lanes first.
#include <catch2/catch.hpp>
#include <trace.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "lanes_support.hpp"
#include "test_support.hpp"

using namespace test_support;
using namespace lanes_support;

namespace {

StreamGuard stream_of(size_t stream_size, int policy, size_t max_data_size = 0)
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    if (max_data_size)
        REQUIRE(posix_trace_attr_setmaxdatasize(&attr, max_data_size) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, stream_size) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&attr, policy) == 0);
    StreamGuard stream = make_stream(&attr);
    posix_trace_attr_destroy(&attr);
    filter_thread_events(stream.get());
    return stream;
}

// Starts the stream and gives it `count` events of `bytes` bytes, the first
// 4 their index, with the drain held.
void emit_burst_drain_held(trace_id_t stream, trace_event_id_t id, int count, size_t bytes = 64)
{
    REQUIRE(posix_trace_start(stream) == 0);
    DrainStarved starved;
    std::vector<unsigned char> data(bytes);
    for (int i = 0; i < count; ++i) {
        std::memcpy(data.data(), &i, sizeof i);
        posix_trace_event(id, data.data(), data.size());
    }
}

// The indexes of the events of `id` read, in the order read.
std::vector<int> indexes_of(const std::vector<Event> &events, trace_event_id_t id)
{
    std::vector<int> indexes;
    for (const Event &event : events)
        if (event.info.posix_event_id == id && event.data.size() >= sizeof(int)) {
            int index;
            std::memcpy(&index, event.data.data(), sizeof index);
            indexes.push_back(index);
        }
    return indexes;
}

} // namespace

// 200,000 events of 64 bytes take about 24 MB: far more than the drain's
// period lets any fixed transport hold at this rate, less than the stream.
TEST_CASE("lanes: an UNTIL_FULL stream with room for a burst keeps all of it, drain held",
          "[lanes][self-tracing]")
{
    constexpr int kEvents = 200'000;
    StreamGuard stream = stream_of(size_t(64) << 20, POSIX_TRACE_UNTIL_FULL);
    trace_event_id_t id = user_event("room.burst");
    emit_burst_drain_held(stream.get(), id, kEvents);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    std::vector<Event> events = read_available(stream.get());
    CHECK(indexes_of(events, id) == sequence_up_to(kEvents));
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(stream.get(), &counters) == 0);
    CHECK(counters.lost_in_kernel + counters.lost_in_stream == 0);
    check_timestamps_ordered(events);
}

namespace {

// A 64 KiB LOOP stream given `events` events at once, drain held, ends with
// the last of them, the ones before it dropped oldest first and counted.
void check_loop_keeps_newest(int events, const char *name)
{
    StreamGuard stream = stream_of(size_t(64) << 10, POSIX_TRACE_LOOP);
    trace_event_id_t id = user_event(name);
    emit_burst_drain_held(stream.get(), id, events);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    std::vector<int> kept = indexes_of(read_available(stream.get()), id);
    REQUIRE_FALSE(kept.empty());
    CHECK(kept.back() == events - 1);
    // The newest, in order, without a gap. Where the first one out of
    // place is tells what was kept wrong; a whole list would not be read.
    REQUIRE(kept.size() <= size_t(events));
    std::vector<int> newest = sequence_up_to(events);
    newest.erase(newest.begin(), newest.end() - std::ptrdiff_t(kept.size()));
    auto [wrong, expected] = std::mismatch(kept.begin(), kept.end(), newest.begin());
    if (wrong != kept.end())
        FAIL_CHECK(kept.size() << " kept, the first out of place at " << (wrong - kept.begin())
                               << ": " << *wrong << " instead of " << *expected);
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    // The start event may be among the oldest dropped.
    CHECK(losses.overwritten >= uint64_t(events) - kept.size());
    CHECK(losses.overwritten <= uint64_t(events) - kept.size() + 1);
    CHECK(losses.ring_full == 0);
}

} // namespace

// POSIX_TRACE_LOOP keeps the newest.
TEST_CASE("lanes: a 64 KiB LOOP stream given a burst ends with its newest events",
          "[lanes][self-tracing]")
{
    if (uprobe_path_forced())
        return; // the kernel's rings are a transport of their own size (not yet the stream's)
    check_loop_keeps_newest(8'256, "room.loop");
}

// However long the burst: 600,000 events of 64 bytes take about 70 MB, more
// than the lanes may hold (32 MiB at least). A lane that holds what the
// stream keeps takes back its oldest chunk instead of taking the pool's, so
// the newest events stay, and every other is counted overwritten.
TEST_CASE("lanes: a 64 KiB LOOP stream given more than the lanes hold ends with its newest",
          "[lanes][self-tracing]")
{
    if (uprobe_path_forced())
        return;
    check_loop_keeps_newest(600'000, "room.loop.long");
}

// The lanes hold at most a stream's worth (32 MiB at least) while the drain
// is held: 5,000 events of 8 KiB (40 MiB) given to a 16 MiB stream do not
// all fit there, and what did not is counted where it was lost (the lanes
// or the kernel's ring, then the full stream); every event is read or
// counted, in order.
TEST_CASE("lanes: what the lanes cannot hold while the drain is held is counted",
          "[lanes][self-tracing]")
{
    constexpr int kEvents = 5'000;
    StreamGuard stream = stream_of(size_t(16) << 20, POSIX_TRACE_UNTIL_FULL, 8192);
    trace_event_id_t id = user_event("room.big");
    emit_burst_drain_held(stream.get(), id, kEvents, 8192);
    // The lanes hold more than the stream: it fills and stops itself. Only
    // then is it stopped here, so that no stop event of the call is made to
    // be refused too (the kernel's ring holds less: it never fills there).
    for (int waited_ms = 0; !uprobe_path_forced() &&
                            status_of(stream.get()).posix_stream_full_status != POSIX_TRACE_FULL;
         ++waited_ms) {
        REQUIRE(waited_ms < 10'000);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    std::vector<int> indexes = indexes_of(read_available(stream.get()), id);
    size_t read = indexes.size();
    int previous = -1;
    for (int index : indexes) {
        CHECK(index > previous);
        previous = index;
    }
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    INFO("read " << read << ", ring_full " << losses.ring_full << ", refused " << losses.refused);
    CHECK(losses.overwritten + losses.late == 0);
    CHECK(read + losses.ring_full + losses.refused == size_t(kEvents));
    CHECK(losses.ring_full > 0);
    CHECK(read < size_t(kEvents) / 2);
    // Seven records of 8,248 bytes fill a 64 KiB chunk: the lanes' 32 MiB
    // (512 chunks) held about 3,584 of them (the thread's lane may have
    // begun in the middle of a chunk, and other lanes hold theirs).
    if (!uprobe_path_forced()) {
        CHECK(read + losses.refused >= 500 * 7);
        CHECK(read + losses.refused <= 514 * 7);
    }
}
