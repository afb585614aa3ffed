// StreamStore and the full policies, alone: what each policy decides for an
// event that does not fit, and the losses the store keeps for the reader.
// Synthetic records; the streams' tests run the same rules end to end.
#include <catch2/catch.hpp>

#include <posix_trace/events.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "attributes/attributes.hpp"
#include "store/stream_store.hpp"
#include "store_support.hpp"

using posixtrace::FullPolicy;
using posixtrace::LossReport;
using posixtrace::StreamPhase;
using posixtrace::StreamStore;
using Decision = FullPolicy::Decision;

namespace {

constexpr uint32_t kUserEvent = POSIX_TRACE_USER_EVENT_FIRST;
constexpr size_t kPayload = 64;
const size_t kEventBytes = posixtrace::stored_event_size(kPayload);

pt_record record_of(uint32_t id, uint64_t stamp, uint32_t data_len = kPayload)
{
    pt_record record{};
    record.event_id = id;
    record.timestamp_ns = stamp;
    record.data_len = data_len;
    return record;
}

// Offers events stamped 1, 2, ... as a stream would: the policy first, then
// the store if there is room. Returns the decisions.
std::vector<Decision> offer(StreamStore &store, const FullPolicy &policy, int events,
                            StreamPhase phase = StreamPhase::Running, uint64_t first_stamp = 1)
{
    std::vector<Decision> decisions;
    std::vector<uint8_t> data(kPayload, 0xab);
    for (int i = 0; i < events; ++i) {
        pt_record record = record_of(kUserEvent, first_stamp + uint64_t(i));
        Decision decision = policy.make_room(store, record, kEventBytes, phase);
        decisions.push_back(decision);
        if (decision == Decision::Store && store.fits(kEventBytes))
            store.push(record, data.data());
    }
    return decisions;
}

std::vector<uint64_t> stamps_of(StreamStore &store)
{
    std::vector<uint64_t> stamps;
    for (; !store.empty(); take_oldest(store))
        stamps.push_back(oldest_of(store).timestamp_ns);
    return stamps;
}

} // namespace

TEST_CASE("LOOP store: the newest events stay, the overwritten ones are counted and reported")
{
    StreamStore store(10 * kEventBytes, POSIX_TRACE_LOOP);
    REQUIRE(store.valid());
    auto policy = FullPolicy::make(POSIX_TRACE_LOOP);
    for (Decision decision : offer(store, *policy, 25))
        REQUIRE(decision == Decision::Store);
    CHECK(store.full());
    StreamStore::Overwritten overwritten = store.take_overwritten();
    CHECK(overwritten.records == 15);
    CHECK(overwritten.events == 15);
    CHECK(store.take_overwritten().records == 0); // taken once
    REQUIRE(store.report_due());
    std::optional<LossReport> report = store.take_overwritten_report();
    REQUIRE(report);
    CHECK(report->in_stream == 15);
    CHECK(report->in_kernel == 0);
    CHECK(report->timestamp_ns == 15);                               // the newest event overwritten
    CHECK(store.take_resume_stamp() == std::optional<uint64_t>(16)); // the oldest left
    CHECK_FALSE(store.report_due());
    std::vector<uint64_t> expected;
    for (uint64_t stamp = 16; stamp <= 25; ++stamp)
        expected.push_back(stamp);
    CHECK(stamps_of(store) == expected);
}

TEST_CASE("LOOP store: an overwritten loss report hands its counts on")
{
    StreamStore store(3 * kEventBytes, POSIX_TRACE_LOOP);
    auto policy = FullPolicy::make(POSIX_TRACE_LOOP);
    posix_trace_overflow_data earlier{7, 3, 4};
    pt_record overflow = record_of(POSIX_TRACE_OVERFLOW, 1, sizeof earlier);
    store.push(overflow, &earlier);
    offer(store, *policy, 3, StreamPhase::Running, 2); // overwrites the report, not an event
    StreamStore::Overwritten overwritten = store.take_overwritten();
    CHECK(overwritten.records == 1); // the overrun status is set all the same
    CHECK(overwritten.events == 0);
    std::optional<LossReport> report = store.take_overwritten_report();
    REQUIRE(report);
    CHECK(report->in_kernel == 3);
    CHECK(report->in_stream == 4);
}

TEST_CASE("LOOP store: a read makes room, so the stream is full no more")
{
    StreamStore store(2 * kEventBytes, POSIX_TRACE_LOOP);
    auto policy = FullPolicy::make(POSIX_TRACE_LOOP);
    offer(store, *policy, 3);
    REQUIRE(store.full());
    take_oldest(store);
    policy->after_read(store);
    CHECK_FALSE(store.full());
}

TEST_CASE("UNTIL_FULL store: it stops with room kept for the stop and the loss report")
{
    StreamStore store(4 * kEventBytes, POSIX_TRACE_UNTIL_FULL);
    auto policy = FullPolicy::make(POSIX_TRACE_UNTIL_FULL);
    std::vector<Decision> decisions = offer(store, *policy, 5);
    CHECK(std::count(decisions.begin(), decisions.end(), Decision::Store) == 4);
    CHECK(decisions.back() == Decision::StopThenRefuse);

    // The stream's stop event takes the room kept for it.
    pt_record stop = record_of(POSIX_TRACE_STOP, 6, sizeof(posix_trace_stop_data));
    stop.cpu = PT_CPU_SYSTEM;
    size_t stop_bytes = posixtrace::stored_event_size(stop.data_len);
    CHECK(policy->make_room(store, stop, stop_bytes, StreamPhase::Running) == Decision::Store);
    // Once stopped, everything is refused, even what would fit.
    pt_record small = record_of(kUserEvent, 7, 0);
    CHECK(policy->make_room(store, small, posixtrace::stored_event_size(0),
                            StreamPhase::StoppedFull) == Decision::Refuse);
}

TEST_CASE("UNTIL_FULL store: what it refuses while full is kept for the restart")
{
    StreamStore store(4 * kEventBytes, POSIX_TRACE_UNTIL_FULL);
    std::vector<uint8_t> data(kPayload);
    CHECK(store.refuse(record_of(kUserEvent, 1), data.data()));
    CHECK(store.refuse(record_of(kUserEvent, 2), data.data()));
    posix_trace_overflow_data carried{5, 2, 3};
    CHECK_FALSE(store.refuse(record_of(POSIX_TRACE_OVERFLOW, 3, sizeof carried), &carried));
    CHECK_FALSE(store.refuse(record_of(POSIX_TRACE_RESUME, 4, 0), nullptr));
    store.add_refused(10);
    LossReport refused = store.take_refused();
    CHECK(refused.in_stream == 2 + 3 + 10);
    CHECK(refused.in_kernel == 2);
    CHECK_FALSE(store.take_refused().any());
}

TEST_CASE("UNTIL_FULL store: full until read empty, and a flush does not end it")
{
    StreamStore store(2 * kEventBytes, POSIX_TRACE_UNTIL_FULL);
    auto policy = FullPolicy::make(POSIX_TRACE_UNTIL_FULL);
    offer(store, *policy, 2);
    store.set_full(true);
    policy->after_flush(store);
    CHECK(store.full());
    take_oldest(store);
    policy->after_read(store);
    CHECK(store.full());
    take_oldest(store);
    policy->after_read(store);
    CHECK_FALSE(store.full());
}

TEST_CASE("FLUSH store: an event that does not fit asks for a flush first")
{
    StreamStore store(3 * kEventBytes, POSIX_TRACE_FLUSH);
    auto policy = FullPolicy::make(POSIX_TRACE_FLUSH);
    std::vector<Decision> decisions = offer(store, *policy, 4);
    CHECK(decisions == std::vector<Decision>{Decision::Store, Decision::Store, Decision::Store,
                                             Decision::FlushThenStore});
    CHECK(store.take_overwritten().records == 0);
    store.set_full(true);
    policy->after_flush(store);
    CHECK_FALSE(store.full());
}

TEST_CASE("clear: the store forgets its events and every loss it held")
{
    StreamStore store(2 * kEventBytes, POSIX_TRACE_LOOP);
    auto policy = FullPolicy::make(POSIX_TRACE_LOOP);
    offer(store, *policy, 5);
    store.add_refused(4);
    store.clear();
    CHECK(store.empty());
    CHECK_FALSE(store.full());
    CHECK_FALSE(store.report_due());
    CHECK(store.take_overwritten().records == 0);
    CHECK_FALSE(store.take_refused().any());
}

// The runs a stream held for its log, given back to a reader: put among the
// events held in time order (each before the first one stamped later, after
// those stamped the same), with their data; what has no room is counted.
TEST_CASE("store: events held apart are merged in among the events held, in time order")
{
    StreamStore store(16 * kEventBytes, POSIX_TRACE_FLUSH);
    auto data_of = [](uint64_t stamp) { return std::vector<uint8_t>(kPayload, uint8_t(stamp)); };
    for (uint64_t stamp : {10, 20, 30}) {
        std::vector<uint8_t> data = data_of(stamp);
        store.push(record_of(kUserEvent, stamp), data.data());
    }
    std::vector<StreamStore::HeldEvent> apart;
    for (uint64_t stamp : {5, 20, 25, 35, 36})
        apart.push_back({data_of(stamp + 100), record_of(kUserEvent + 1, stamp)});
    CHECK(store.merge_in(apart) == 0);
    std::vector<std::pair<uint64_t, uint32_t>> order;
    while (!store.empty()) {
        const pt_record &record = oldest_of(store);
        CHECK(record.data_len == kPayload);
        uint8_t expected = uint8_t(record.timestamp_ns + (record.event_id == kUserEvent ? 0 : 100));
        CHECK(std::all_of(record.data, record.data + kPayload,
                          [&](uint8_t byte) { return byte == expected; }));
        order.emplace_back(record.timestamp_ns, record.event_id - kUserEvent);
        take_oldest(store);
    }
    CHECK(order == std::vector<std::pair<uint64_t, uint32_t>>{
                       {5, 1}, {10, 0}, {20, 0}, {20, 1}, {25, 1}, {30, 0}, {35, 1}, {36, 1}});

    StreamStore small(4 * kEventBytes, POSIX_TRACE_FLUSH); // room for 4 (and a stop)
    for (uint64_t stamp : {10, 20}) {
        std::vector<uint8_t> data = data_of(stamp);
        small.push(record_of(kUserEvent, stamp), data.data());
    }
    uint64_t refused = small.merge_in(apart);
    size_t held = 0;
    for (; !small.empty(); take_oldest(small))
        ++held;
    CHECK(held + refused == 2 + apart.size());
    CHECK(refused > 0);
}
