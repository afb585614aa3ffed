// The merge's offers of a lane's whole chunks to a sink that takes them at
// once (a POSIX_TRACE_FLUSH stream's runs for its log), on LocalRings
// written here, some by real threads: whatever the sink takes or leaves,
// every record comes out once, the merged ones in time order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "sources/lanes/chunk_pool.hpp"
#include "sources/lanes/local_ring.hpp"
#include "stream/ring_merger.hpp"
#include "util/clock.hpp"

using posixtrace::ChunkPool;
using posixtrace::LocalRing;
using posixtrace::monotonic_now;
using posixtrace::RecordRing;
using posixtrace::RingMerger;
using posixtrace::SystemEvent;

namespace {

struct Taken {
    uint64_t chunks = 0, records = 0, unordered = 0, too_early = 0, busy = 0;
};

// Takes every record of a whole chunk, as a stream's runs do: numbered as
// the writers of merge_while_writing number them, into `seen`.
std::optional<uint64_t> take_chunk(const RingMerger::Chunk &chunk, Taken &taken,
                                   std::vector<std::vector<int>> &seen)
{
    uint64_t latest = 0;
    for (uint64_t at = chunk.from; at < chunk.to;) {
        RecordRing::Record next = chunk.ring.at(at);
        at += next.size;
        taken.busy += next.slot == RecordRing::Slot::Busy;
        if (next.slot != RecordRing::Slot::Committed)
            continue;
        const pt_record &record = *next.record;
        taken.unordered += record.timestamp_ns < latest;
        taken.too_early += record.timestamp_ns < chunk.not_before_ns;
        latest = record.timestamp_ns;
        int index;
        std::memcpy(&index, record.data, sizeof index);
        seen[record.tid].push_back(index);
        ++taken.records;
    }
    ++taken.chunks;
    return latest;
}

} // namespace

// The merge offers the whole chunks it has not read to a sink that takes
// them at once (a stream's runs): whatever it takes or leaves, every record
// comes out once, the merged ones in time order, each chunk whole.
TEST_CASE("local ring: whole chunks taken at once while writers write: every record once",
          "[local-ring][runs]")
{
    // Waiting: a chunk its writer is in waits unread if begun in the last
    // 100 us, as a stream's drain has it wait for its runs.
    bool waiting = GENERATE(false, true);
    INFO((waiting ? "chunks being written wait" : "chunks being written are read"));
    ChunkPool pool(64 * 1024, 1024);
    pool.allow(1024); // room for everything: nothing is lost
    constexpr int kRecords = 300'000;
    RingMerger merger;
    std::vector<LocalRing *> rings;
    for (int w = 0; w < 2; ++w) {
        auto ring = std::make_unique<LocalRing>(pool, 512);
        REQUIRE(ring->mapped());
        rings.push_back(ring.get());
        merger.add_ring(std::move(ring), monotonic_now());
    }
    std::atomic<int> writing{2};
    std::atomic<bool> refused{false}; // Catch2 asserts from the main thread only
    std::atomic<int> written[2] = {0, 0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 2; ++w)
        threads.emplace_back([&, w] {
            for (int i = 0; i < kRecords && !refused; ++i) {
                pt_record *record = rings[size_t(w)]->reserve(16);
                if (!record) {
                    refused = true;
                    break;
                }
                record->flags = 0; // as a lane's writer sets them
                record->timestamp_ns = monotonic_now();
                record->tid = uint32_t(w);
                std::memcpy(record->data, &i, sizeof i);
                rings[size_t(w)]->commit(record);
                written[w].store(i + 1, std::memory_order_relaxed);
            }
            --writing;
        });
    std::vector<std::vector<int>> seen(2);
    Taken taken;
    uint64_t last = 0, out_of_order = 0, late = 0, offers = 0;
    RingMerger::Sinks sinks{[&](const pt_record &record) {
                                out_of_order += record.timestamp_ns < last;
                                last = record.timestamp_ns;
                                int index;
                                std::memcpy(&index, record.data, sizeof index);
                                seen[record.tid].push_back(index);
                            },
                            [](SystemEvent &&) {}, [&](const pt_record &) { ++late; },
                            [&](const RingMerger::Chunk &chunk) -> std::optional<uint64_t> {
                                if (++offers % 3 == 0)
                                    return std::nullopt; // left to the merge, record by record
                                return take_chunk(chunk, taken, seen);
                            }};
    std::deque<SystemEvent> system;
    // Each merge waits until a ring has three chunks more than at the
    // merge before (a chunk holds 910 of these records): a whole chunk is
    // there to take however slowly the writers run beside the merge.
    constexpr int kNewRecordsBeforeMerge = 3 * 1024;
    int merged_at[2] = {0, 0};
    auto enough_new = [&] {
        return written[0] - merged_at[0] >= kNewRecordsBeforeMerge ||
               written[1] - merged_at[1] >= kNewRecordsBeforeMerge;
    };
    while (writing > 0 || merger.holding()) {
        while (writing > 0 && !enough_new())
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        merged_at[0] = written[0];
        merged_at[1] = written[1];
        uint64_t now = monotonic_now();
        sinks.unfinished_waits_after_ns = waiting ? now - 100'000 : UINT64_MAX;
        merger.merge(now, system, sinks);
    }
    for (auto &thread : threads)
        thread.join();
    REQUIRE_FALSE(refused);
    sinks.unfinished_waits_after_ns = UINT64_MAX;
    merger.merge(monotonic_now() + RingMerger::kClockMarginNs, system, sinks);
    INFO(taken.chunks << " chunks taken, " << taken.records << " records in them");
    CHECK(taken.chunks > 0);
    CHECK(taken.busy == 0);
    CHECK(taken.unordered == 0);
    CHECK(taken.too_early == 0);
    CHECK(out_of_order == 0);
    CHECK(late == 0);
    for (auto &indexes : seen) {
        std::sort(indexes.begin(), indexes.end());
        CHECK(indexes.size() == size_t(kRecords));
        CHECK(std::adjacent_find(indexes.begin(), indexes.end()) == indexes.end());
        CHECK(indexes.front() == 0);
        CHECK(indexes.back() == kRecords - 1);
    }
}

// A ring written as fast as another, but stamped later, is not taken far
// ahead of it: the sink's runs stay close behind what is complete.
TEST_CASE("local ring: chunks are offered about in time order across rings", "[local-ring][runs]")
{
    ChunkPool pool(64 * 1024, 64);
    pool.allow(64);
    RingMerger merger;
    std::vector<LocalRing *> rings; // the later-stamped ring is read first
    for (int r = 0; r < 2; ++r) {
        auto ring = std::make_unique<LocalRing>(pool, 16);
        rings.push_back(ring.get());
        merger.add_ring(std::move(ring), 0);
    }
    auto fill = [](LocalRing &ring, uint64_t from_ns, int tid) {
        uint64_t written = 0;
        for (uint64_t stamp = from_ns; ring.producer() < 3 * 64 * 1024 + 4096; stamp += 1000) {
            pt_record *record = ring.reserve(16);
            REQUIRE(record);
            record->flags = 0; // as a lane's writer sets them
            record->timestamp_ns = stamp;
            record->tid = uint32_t(tid);
            ring.commit(record);
            ++written;
        }
        return written;
    };
    fill(*rings[0], 50'000'000, 0); // from 50 ms on, a microsecond apart
    fill(*rings[1], 1'000'000, 1);  // from 1 ms on
    std::vector<int> offered_from;  // the ring of each chunk taken, in order
    Taken taken;
    std::vector<std::vector<int>> seen(2);
    RingMerger::Sinks sinks{[](const pt_record &) {}, [](SystemEvent &&) {},
                            [](const pt_record &) {},
                            [&](const RingMerger::Chunk &chunk) -> std::optional<uint64_t> {
                                offered_from.push_back(int(chunk.ring.at(chunk.from).record->tid));
                                return take_chunk(chunk, taken, seen);
                            }};
    std::deque<SystemEvent> system;
    for (int pass = 0; pass < 20; ++pass)
        merger.merge(1'000'000'000, system, sinks);
    // Each ring's three whole chunks; the earlier ring's first.
    CHECK(offered_from == std::vector<int>{1, 1, 1, 0, 0, 0});
}

// A stream's drain that keeps up with a writer has the chunk it writes wait,
// so that it becomes a run whole: the chunk holds the safe point at its
// first record, no earlier, and nothing of it is read until its writer
// moves on. A chunk begun before the sink's time is read a record at a time.
TEST_CASE("merge: a chunk being written waits to be taken whole when begun after a time",
          "[local-ring][runs]")
{
    constexpr uint64_t ms = 1'000'000;
    ChunkPool pool(64 * 1024, 16);
    pool.allow(16);
    RingMerger merger;
    auto owned = std::make_unique<LocalRing>(pool, 8);
    LocalRing &ring = *owned;
    merger.add_ring(std::move(owned), 0);
    uint64_t stamp = 10 * ms;
    int written = 0;
    auto write_up_to = [&](uint64_t position) {
        while (ring.producer() < position) {
            pt_record *record = ring.reserve(16);
            REQUIRE(record);
            record->flags = 0; // as a lane's writer sets them
            record->timestamp_ns = stamp += 1000;
            std::memcpy(record->data, &written, sizeof written);
            ring.commit(record);
            ++written;
        }
    };
    std::vector<std::vector<int>> seen(1);
    std::vector<uint64_t> delivered;
    Taken taken;
    uint64_t late = 0;
    RingMerger::Sinks sinks{
        [&](const pt_record &record) {
            delivered.push_back(record.timestamp_ns);
            int index;
            std::memcpy(&index, record.data, sizeof index);
            seen[0].push_back(index);
        },
        [&](SystemEvent &&event) { delivered.push_back(event.header.timestamp_ns); },
        [&](const pt_record &) { ++late; },
        [&](const RingMerger::Chunk &chunk) { return take_chunk(chunk, taken, seen); }};
    sinks.unfinished_waits_after_ns = 10 * ms; // before the first record
    std::deque<SystemEvent> system(1);
    system.front().header.timestamp_ns = 5 * ms;

    write_up_to(32 * 1024); // half the first chunk, from 10.001 ms on
    uint64_t safe = merger.merge(1000 * ms, system, sinks);
    CHECK(safe == 10 * ms + 1000 - RingMerger::kClockMarginNs);
    CHECK(delivered == std::vector<uint64_t>{5 * ms}); // before the chunk: not held back
    CHECK(taken.chunks == 0);
    CHECK(seen[0].empty());

    write_up_to(64 * 1024 + 4096); // on into the second chunk
    int first_chunk = int(seen[0].size());
    merger.merge(1000 * ms, system, sinks);
    CHECK(taken.chunks == 1);
    CHECK(taken.busy == 0);
    CHECK(taken.too_early == 0);
    first_chunk = int(seen[0].size()) - first_chunk;
    CHECK(first_chunk > 0);
    CHECK(first_chunk < written);
    CHECK(delivered.size() == 1); // the second chunk waits in turn

    sinks.unfinished_waits_after_ns = stamp; // after the second chunk began
    safe = merger.merge(1000 * ms, system, sinks);
    CHECK(taken.chunks == 1);
    CHECK(delivered.size() == 1 + size_t(written - first_chunk));
    CHECK(std::is_sorted(delivered.begin(), delivered.end()));
    CHECK(safe == 1000 * ms - RingMerger::kClockMarginNs);
    CHECK(late == 0);
    std::sort(seen[0].begin(), seen[0].end());
    REQUIRE(seen[0].size() == size_t(written));
    for (int i = 0; i < written; ++i)
        REQUIRE(seen[0][size_t(i)] == i);
}
