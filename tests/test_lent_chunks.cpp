// Lanes' chunks a stream's store keeps where the lanes wrote them (LentChunks,
// StreamIntake::lend_chunk): read among the store's own events in timestamp
// order, given back to their pool once read, and checked again as they are
// read, since the process may write over them. Real lanes (LocalRing) in a
// real pool; no stream, no kernel.
#include <catch2/catch.hpp>
#include <linux/bpf.h>

#include <posix_trace/events.h>
#include <trace.h>

#include <cstring>
#include <memory>
#include <vector>

#include "sources/lanes/chunk_pool.hpp"
#include "sources/lanes/local_ring.hpp"
#include "store_support.hpp"
#include "stream/stream_intake.hpp"

using namespace posixtrace;

namespace {

constexpr pid_t kTarget = 4194301; // no process has it: nothing reads its memory
constexpr int64_t kRealtimeOffset = 1'000'000;
constexpr uint32_t kPayload = 64;
constexpr uint64_t kChunkBytes = 4096;
const uint64_t kPerChunk = kChunkBytes / RecordRing::span_of(PT_RECORD_HEADER_SIZE + kPayload);
// A stream lends only while it has room for more than a few MiB beside.
constexpr size_t kRoomForMany = 100'000;

struct Owner final : StreamIntake::Owner {
    void stop_recording_while_full() override
    {
        ++stops;
        phase_now = StreamPhase::StoppedFull;
    }
    void flush_to_log(uint64_t) override {}
    pt_record system_record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const override
    {
        return system_record_of(id, timestamp_ns, size);
    }
    StreamPhase phase_now = StreamPhase::Running;
    int stops = 0;
};

ChunkJudge judge_passing_all()
{
    return {[](uint64_t) { return true; }, [](const pt_record &) { return true; }};
}

// A lane of page-sized chunks, its records user events of 64 bytes whose
// data starts with their stamp.
struct Lane {
    explicit Lane(ChunkPool &pool) : ring(pool, 16) {}
    void write(uint64_t stamp)
    {
        pt_record *record = ring.reserve(kPayload);
        REQUIRE(record);
        record->timestamp_ns = stamp;
        record->flags = 0; // as a lane's writer sets them
        record->event_id = POSIX_TRACE_USER_EVENT_FIRST;
        record->pid = uint32_t(kTarget);
        record->data_len = kPayload;
        std::memset(record->data, 0, kPayload);
        std::memcpy(record->data, &stamp, sizeof stamp);
        ring.commit(record);
    }
    // Every record written so far is the reader's, and its last chunk ends.
    void close()
    {
        ring.close_chunk();
        uint64_t scanned = claimed;
        claimed = ring.readable_within(scanned, LocalRing::kWhole).end;
    }
    RingMerger::Chunk chunk(unsigned index, uint64_t not_before_ns = 0)
    {
        return {ring, index * kChunkBytes, (index + 1) * kChunkBytes, not_before_ns};
    }
    // The header of the `index`th record of chunk `chunk`.
    uint32_t *header_of(unsigned chunk, unsigned index)
    {
        const RecordRing::Record first = ring.at(chunk * kChunkBytes);
        auto *start =
            reinterpret_cast<uint8_t *>(const_cast<pt_record *>(first.record)) - BPF_RINGBUF_HDR_SZ;
        return reinterpret_cast<uint32_t *>(start + index * first.size);
    }
    LocalRing ring;
    uint64_t claimed = 0;
};

struct Store {
    explicit Store(size_t events, int policy = POSIX_TRACE_UNTIL_FULL)
        : store(events * stored_event_size(kPayload), policy, kRealtimeOffset),
          full_policy(FullPolicy::make(policy)),
          user_events(
              kTarget, [](pid_t) { return uint32_t(1); }, nullptr),
          pipeline(kTarget, user_events, filters),
          intake(store, *full_policy, pipeline, ledger, filters, owner.phase_now, owner)
    {
        pool.allow(64);
        intake.lend_chunks_judged_by(judge_passing_all());
    }
    void store_event(uint64_t stamp)
    {
        pt_record record{};
        record.event_id = POSIX_TRACE_UNNAMED_USEREVENT;
        record.timestamp_ns = stamp;
        record.pid = uint32_t(kTarget);
        record.data_len = kPayload;
        uint8_t data[kPayload] = {};
        intake.store(record, data);
    }
    // The stamps (back in CLOCK_MONOTONIC) of every event readable now.
    std::vector<uint64_t> read_all()
    {
        std::vector<uint64_t> stamps;
        while (const StoredEvent *event = store.peek()) {
            stamps.push_back(uint64_t(int64_t(event->timestamp_ns) - kRealtimeOffset));
            store.pop_peeked();
        }
        return stamps;
    }

    ChunkPool pool{kChunkBytes, 64};
    StreamStore store;
    std::unique_ptr<FullPolicy> full_policy;
    FilterHistory filters;
    StreamUserEvents user_events;
    RecordPipeline pipeline;
    LossLedger ledger;
    Owner owner;
    StreamIntake intake;
};

std::vector<uint64_t> stamps_from(uint64_t first, uint64_t step, uint64_t count)
{
    std::vector<uint64_t> stamps;
    for (uint64_t i = 0; i < count; ++i)
        stamps.push_back(first + i * step);
    return stamps;
}

} // namespace

TEST_CASE("lent chunks: read in place among the store's events, oldest first, once settled",
          "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(100, 10, 2 * kPerChunk))
        lane.write(stamp);
    lane.close();
    REQUIRE(stream.intake.lend_chunk(lane.chunk(0)) == 100 + (kPerChunk - 1) * 10);
    REQUIRE(stream.intake.lend_chunk(lane.chunk(1)));
    CHECK(stream.pool.lent() == 2);
    CHECK(stream.ledger.counters().recorded == 2 * kPerChunk);
    // The merge delivers what is stamped before its safe point; nothing
    // lent is read before the safe point passes it.
    stream.store_event(95);
    stream.store_event(100); // a tie: the stored one first
    stream.store.settle_before(101);
    CHECK(stream.read_all() == std::vector<uint64_t>{95, 100, 100});
    stream.store_event(255); // between two of the lane's
    stream.store.settle_before(256);
    std::vector<uint64_t> expected = stamps_from(110, 10, 15);
    expected.push_back(255);
    CHECK(stream.read_all() == expected);
    stream.store.settle_before(UINT64_MAX);
    CHECK(stream.read_all() == stamps_from(260, 10, 2 * kPerChunk - 16));
    CHECK(stream.store.empty());
    CHECK(stream.pool.lent() == 0);
    CHECK(stream.pool.taken() == 0);
}

TEST_CASE("lent chunks: two lanes read merged by stamp", "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane odd(stream.pool), even(stream.pool);
    for (uint64_t i = 0; i < kPerChunk; ++i) {
        odd.write(2 * i + 1);
        even.write(2 * i + 2);
    }
    odd.close();
    even.close();
    REQUIRE(stream.intake.lend_chunk(even.chunk(0)));
    REQUIRE(stream.intake.lend_chunk(odd.chunk(0)));
    stream.store.settle_before(UINT64_MAX);
    CHECK(stream.read_all() == stamps_from(1, 1, 2 * kPerChunk));
}

TEST_CASE("lent chunks: a chunk the stages must judge record by record is not lent",
          "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(100, 10, kPerChunk))
        lane.write(stamp);
    lane.close();
    SECTION("older than what the merge delivered")
    {
        CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(0, 105)));
    }
    SECTION("stamped before what a reader may have read")
    {
        stream.store.settle_before(101);
        CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(0)));
    }
    SECTION("out of order")
    {
        *reinterpret_cast<uint64_t *>(lane.header_of(0, 3) + 2) = 1;
        CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(0)));
    }
    SECTION("a record the judge refuses")
    {
        constexpr uint32_t kRenumbered = POSIX_TRACE_USER_EVENT_FIRST + 7;
        lane.header_of(0, 7)[2 + 8] = kRenumbered; // its event_id
        stream.intake.lend_chunks_judged_by(
            {[](uint64_t) { return true; },
             [](const pt_record &record) { return record.event_id != kRenumbered; }});
        CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(0)));
    }
    SECTION("a chunk mostly empty (its lane closed it early)")
    {
        Lane other(stream.pool);
        for (uint64_t stamp : stamps_from(100, 10, kPerChunk / 2))
            other.write(stamp);
        other.close();
        CHECK_FALSE(stream.intake.lend_chunk(other.chunk(0)));
    }
    SECTION("a stream too small to keep the last of its room for the merge")
    {
        Store small(kPerChunk / 2);
        Lane other(small.pool);
        for (uint64_t stamp : stamps_from(100, 10, kPerChunk))
            other.write(stamp);
        other.close();
        CHECK_FALSE(small.intake.lend_chunk(other.chunk(0)));
        CHECK(small.pool.lent() == 0);
    }
    CHECK(stream.pool.lent() == 0);
    CHECK(stream.ledger.counters().recorded == 0);
}

TEST_CASE("lent chunks: a stream nobody reads down copies instead", "[lent-chunks]")
{
    Store stream(400'000);
    uint64_t stamp = 1;
    while (stream.store.held() < (16u << 20)) // a backlog of 16 MiB, unread
        stream.store_event(stamp++);
    Lane lane(stream.pool);
    for (uint64_t each : stamps_from(stamp, 10, kPerChunk))
        lane.write(each);
    lane.close();
    CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(0)));
    stream.store.settle_before(stamp);
    for (int i = 0; i < 1000; ++i)
        take_oldest(stream.store);
    CHECK(stream.intake.lend_chunk(lane.chunk(0))); // read down below it
}

TEST_CASE("lent chunks: a stream being read lends past its backlog until reading stops",
          "[lent-chunks]")
{
    Store stream(400'000);
    uint64_t stamp = 1;
    while (stream.store.held() < (17u << 20)) // a backlog past 16 MiB
        stream.store_event(stamp++);
    Lane lane(stream.pool);
    for (uint64_t each : stamps_from(stamp, 10, 2 * kPerChunk))
        lane.write(each);
    lane.close();
    stream.store.settle_before(stamp);
    uint64_t pass_ns = 1'000'000'000;
    stream.store.note_pass(pass_ns);
    CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(0))); // not read yet
    take_oldest(stream.store);
    stream.store.note_pass(pass_ns += 1'000'000);
    REQUIRE(stream.store.held() >= (16u << 20));
    CHECK(stream.intake.lend_chunk(lane.chunk(0))); // read lately
    stream.store.note_pass(pass_ns += StreamStore::kReadLatelyNs);
    CHECK(stream.store.read_lately()); // the read is as old as the window
    stream.store.note_pass(pass_ns += 1);
    CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(1))); // reading stopped
}

TEST_CASE("lent chunks: only a chunk a few passes ahead of the merge's safe point is lent",
          "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(1'000'000'000, 10, kPerChunk))
        lane.write(stamp);
    lane.close();
    CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(0))); // a record being written held it back
    stream.store.settle_before(999'000'000);
    CHECK(stream.intake.lend_chunk(lane.chunk(0)));
}

TEST_CASE("lent chunks: a chunk older than one its lane lent before is not lent", "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(100, 10, kPerChunk))
        lane.write(stamp);
    for (uint64_t stamp : stamps_from(1, 1, kPerChunk))
        lane.write(stamp); // a process that wrote its own stamps
    lane.close();
    REQUIRE(stream.intake.lend_chunk(lane.chunk(0)));
    CHECK_FALSE(stream.intake.lend_chunk(lane.chunk(1)));
    CHECK(stream.pool.lent() == 1);
}

TEST_CASE("lent chunks: a record the process wrote over ends its chunk there, counted lost",
          "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(100, 10, 2 * kPerChunk))
        lane.write(stamp);
    lane.close();
    REQUIRE(stream.intake.lend_chunk(lane.chunk(0)));
    REQUIRE(stream.intake.lend_chunk(lane.chunk(1)));
    uint32_t *header = lane.header_of(0, 5);
    SECTION("its length past the chunk's end")
    {
        *header = 1u << 20;
    }
    SECTION("busy again")
    {
        *header |= BPF_RINGBUF_BUSY_BIT;
    }
    SECTION("its data longer than its record")
    {
        header[2 + 9] = 4096;
    } // data_len
    SECTION("stamped before the record before it")
    {
        *reinterpret_cast<uint64_t *>(header + 2) = 99;
    }
    SECTION("stamped past its chunk's latest when lent")
    {
        *reinterpret_cast<uint64_t *>(header + 2) = 1'000'000;
    }
    SECTION("made a system event")
    {
        header[2 + 8] = POSIX_TRACE_STOP;
    }
    SECTION("made a notice")
    {
        reinterpret_cast<uint16_t *>(header + 2 + 11)[0] = PT_RECORD_NOTICE_ONLY;
    }
    SECTION("claiming namespace ids, which only the kernel's records carry")
    {
        header[2 + 9] = kPayload - sizeof(pt_namespace_ids); // so that they would fit
        reinterpret_cast<uint16_t *>(header + 2 + 11)[0] = PT_RECORD_NAMESPACE_IDS;
    }
    stream.store.settle_before(UINT64_MAX);
    std::vector<uint64_t> expected = stamps_from(100, 10, 5);
    std::vector<uint64_t> second = stamps_from(100 + kPerChunk * 10, 10, kPerChunk);
    expected.insert(expected.end(), second.begin(), second.end());
    CHECK(stream.read_all() == expected);
    CHECK(stream.store.take_damaged() == kPerChunk - 5);
    CHECK(stream.pool.lent() == 0);
}

TEST_CASE("lent chunks: a record discarded after it was lent is counted lost", "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(100, 10, kPerChunk))
        lane.write(stamp);
    lane.close();
    REQUIRE(stream.intake.lend_chunk(lane.chunk(0)));
    *lane.header_of(0, 5) |= BPF_RINGBUF_DISCARD_BIT;
    stream.store.settle_before(UINT64_MAX);
    CHECK(stream.read_all().size() == kPerChunk - 1);
    CHECK(stream.store.take_damaged() == 1);
}

TEST_CASE("lent chunks: UNTIL_FULL's stop cuts what was lent from its stamp on", "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(1'000'000, 10, kPerChunk))
        lane.write(stamp);
    lane.close();
    REQUIRE(stream.intake.lend_chunk(lane.chunk(0)));
    // Older events come through the merge until one finds no room: the room
    // the lent ones took.
    uint64_t stamp = 1;
    for (; stream.owner.stops == 0; ++stamp)
        stream.store_event(stamp);
    uint64_t stopped_at = stamp - 1;
    CHECK(stopped_at < 1'000'000);
    CHECK(stream.pool.lent() == 0); // all of it cut
    stream.store.settle_before(UINT64_MAX);
    std::vector<uint64_t> read = stream.read_all();
    REQUIRE(!read.empty());
    CHECK(read.back() == stopped_at); // the stop event, last
    CHECK(read.size() == stopped_at); // the events before it, then it
    posix_trace_counters counters = stream.ledger.counters();
    uint64_t offered = kPerChunk + stopped_at;
    CHECK(counters.recorded + counters.lost_in_stream == offered + 1); // the stop event too
    CHECK(read.size() == counters.recorded);
    CHECK(counters.lost_in_stream == kPerChunk + 1);
}

TEST_CASE("lent chunks: posix_trace_clear gives every chunk back", "[lent-chunks]")
{
    Store stream(kRoomForMany);
    Lane lane(stream.pool);
    for (uint64_t stamp : stamps_from(100, 10, 3 * kPerChunk))
        lane.write(stamp);
    lane.close();
    for (unsigned chunk = 0; chunk < 3; ++chunk)
        REQUIRE(stream.intake.lend_chunk(lane.chunk(chunk)));
    CHECK(stream.pool.lent() == 3);
    stream.store.clear();
    CHECK(stream.store.empty());
    CHECK(stream.pool.lent() == 0);
    stream.store.settle_before(UINT64_MAX);
    CHECK(stream.read_all().empty());
}

TEST_CASE("lent chunks: a chunk lent counts no more against what the lanes may take",
          "[lent-chunks][local-ring]")
{
    ChunkPool pool(kChunkBytes, 64);
    pool.allow(2);
    Lane lane(pool);
    for (uint64_t stamp : stamps_from(1, 1, kPerChunk + 1))
        lane.write(stamp); // a second chunk begun
    uint64_t scanned = 0;
    lane.ring.readable_within(scanned, LocalRing::kWhole);
    std::optional<LentChunk> lent = lane.ring.lend_chunk(0);
    REQUIRE(lent);
    CHECK_FALSE(lane.ring.lend_chunk(0));           // lent once
    CHECK_FALSE(lane.ring.lend_chunk(kChunkBytes)); // not whole: its writer is at it
    lane.ring.release(kChunkBytes);                 // read past it: not handed back
    CHECK(pool.taken() == 2);
    CHECK(pool.take() != ChunkPool::kNone); // room for what is lent
    pool.give_lent(lent->chunk);
    CHECK(pool.lent() == 0);
}
