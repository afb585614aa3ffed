// LocalRing: a ring in the process's memory, in the BPF ring buffer's layout,
// that the merge reads like the kernel's (the ground of the user-event fast
// path, docs/architecture.md). Written and read here by real threads.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
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

// Writes a record whose data is `data_len` bytes of `fill`, stamped `stamp`.
bool write_record(LocalRing &ring, uint32_t data_len, uint8_t fill, uint64_t stamp)
{
    pt_record *record = ring.reserve(data_len);
    if (!record)
        return false;
    record->flags = 0; // as a lane's writer sets them
    record->timestamp_ns = stamp;
    record->data_len = uint16_t(data_len);
    std::memset(record->data, fill, data_len);
    ring.commit(record);
    return true;
}

} // namespace

// A pool of page-sized chunks, `allowed` of which may exist.
struct SmallPool : ChunkPool {
    explicit SmallPool(uint32_t allowed) : ChunkPool(4096, 64) { allow(allowed); }
};

// No record runs past the end of a chunk: one that would starts the next
// chunk, and the rest of its own is a discarded record.
TEST_CASE("local ring: records read back in place, across the ends of chunks", "[local-ring]")
{
    SmallPool pool(2);
    LocalRing ring(pool, 2);
    REQUIRE(ring.mapped());
    uint64_t read = 0;
    size_t fillers = 0;
    for (int i = 0; i < 1000; ++i) { // about 40 times round the ring
        uint32_t data_len = 1 + uint32_t(i * 37 % 150);
        REQUIRE(write_record(ring, data_len, uint8_t(i), uint64_t(i)));
        REQUIRE(read < ring.producer());
        RecordRing::Record next = ring.at(read);
        if (next.slot == RecordRing::Slot::Discarded) {
            ++fillers;
            CHECK((read + next.size) % 4096 == 0);
            read += next.size;
            next = ring.at(read);
        }
        REQUIRE(next.slot == RecordRing::Slot::Committed);
        CHECK(read % 4096 + next.size <= 4096);
        CHECK(next.record->timestamp_ns == uint64_t(i));
        REQUIRE(next.record->data_len == data_len);
        CHECK(std::all_of(next.record->data, next.record->data + data_len,
                          [&](uint8_t byte) { return byte == uint8_t(i); }));
        read += next.size;
        ring.release(read);
    }
    CHECK(read == ring.producer());
    CHECK(ring.lost() == 0);
    CHECK(fillers > 0);      // records that would have run past the end
    CHECK(pool.made() == 2); // the chunks read are taken again
}

TEST_CASE("local ring: a reserved record is busy to the reader until committed", "[local-ring]")
{
    SmallPool pool(1);
    LocalRing ring(pool, 2);
    pt_record *record = ring.reserve(8);
    REQUIRE(record);
    CHECK(ring.at(0).slot == RecordRing::Slot::Busy);
    record->flags = 0; // as a lane's writer sets them
    record->timestamp_ns = 7;
    ring.commit(record);
    RecordRing::Record committed = ring.at(0);
    REQUIRE(committed.slot == RecordRing::Slot::Committed);
    CHECK(committed.record == record);
    CHECK(committed.size == ring.producer());
}

// The process's own memory: it may write over a record it committed.
TEST_CASE("local ring: a record claiming more data than its slot holds is damaged to the reader",
          "[local-ring]")
{
    SmallPool pool(1);
    LocalRing ring(pool, 2);
    pt_record *record = ring.reserve(8);
    REQUIRE(record);
    record->data_len = 8;
    ring.commit(record);
    REQUIRE(ring.at(0).slot == RecordRing::Slot::Committed);
    record->data_len = 1u << 20;
    RecordRing::Record damaged = ring.at(0);
    CHECK(damaged.slot == RecordRing::Slot::Damaged);
    CHECK(damaged.record == nullptr);
    CHECK(damaged.size == ring.producer()); // passed like any other
}

// Only the kernel's programs know a thread's PID namespace: a lane's
// record that claims its ids, even with room for them, is never read.
TEST_CASE("local ring: a record claiming namespace ids is damaged to the reader", "[local-ring]")
{
    SmallPool pool(1);
    LocalRing ring(pool, 2);
    pt_record *record = ring.reserve(16);
    REQUIRE(record);
    record->data_len = 8; // the ids would fit after it
    ring.commit(record);
    REQUIRE(ring.at(0).slot == RecordRing::Slot::Committed);
    record->flags |= PT_RECORD_NAMESPACE_IDS;
    RecordRing::Record damaged = ring.at(0);
    CHECK(damaged.slot == RecordRing::Slot::Damaged);
    CHECK(damaged.record == nullptr);
    CHECK(damaged.size == ring.producer());
}

// A header written over to claim a slot past its chunk's end: the reader
// passes the rest of the chunk as one damaged record, and reads on in the
// next chunk; it never follows the claim into memory of another chunk.
TEST_CASE("local ring: a record whose header claims a slot past its chunk is passed to the chunk's "
          "end",
          "[local-ring]")
{
    SmallPool pool(2);
    auto owned = std::make_unique<LocalRing>(pool, 4);
    LocalRing &ring = *owned;
    std::vector<pt_record *> records;
    for (uint64_t stamp = 1; ring.producer() < 4096 + 1024; ++stamp) {
        pt_record *record = ring.reserve(8);
        REQUIRE(record);
        record->flags = 0; // as a lane's writer sets them
        record->timestamp_ns = stamp;
        record->data_len = 8;
        ring.commit(record);
        records.push_back(record);
    }
    const size_t in_first_chunk = 4096 / 64; // 64-byte records
    REQUIRE(records.size() > in_first_chunk);
    auto *header =
        reinterpret_cast<uint32_t *>(reinterpret_cast<uint8_t *>(records[1]) - BPF_RINGBUF_HDR_SZ);
    *header = 1u << 20;
    RecordRing::Record damaged = ring.at(64);
    CHECK(damaged.slot == RecordRing::Slot::Damaged);
    CHECK(damaged.size == 4096 - 64);
    *header = 4096 - 64 - BPF_RINGBUF_HDR_SZ; // ends at the chunk's end exactly: a record
    CHECK(ring.at(64).slot == RecordRing::Slot::Committed);
    CHECK(ring.at(64).size == 4096 - 64);
    *header = 4096 - 64 - BPF_RINGBUF_HDR_SZ + 1;
    CHECK(ring.at(64).slot == RecordRing::Slot::Damaged);
    CHECK(ring.at(64).size == 4096 - 64);

    RingMerger merger;
    merger.add_ring(std::move(owned), 0);
    std::vector<uint64_t> delivered;
    std::deque<SystemEvent> system;
    RingMerger::Sinks sinks{
        [&](const pt_record &record) { delivered.push_back(record.timestamp_ns); },
        [](SystemEvent &&) {}, [](const pt_record &) {}};
    merger.merge(1'000'000'000, system, sinks);
    CHECK(merger.take_damaged() == 1);
    std::vector<uint64_t> expected{1};
    for (size_t i = in_first_chunk; i < records.size(); ++i)
        expected.push_back(i + 1);
    CHECK(delivered == expected);
}

TEST_CASE("local ring: a ring the pool has no chunk for counts every record it could not hold",
          "[local-ring]")
{
    SmallPool pool(1);
    LocalRing ring(pool, 2);
    // 48-byte records with 8 bytes of header: 73 fit in 4,096 bytes (73 * 56).
    int written = 0;
    for (int i = 0; i < 100; ++i)
        written += write_record(ring, 0, 0, uint64_t(i));
    CHECK(written == 4096 / 56);
    CHECK(ring.lost() == uint64_t(100 - written));
    CHECK_FALSE(ring.reserve(4097)); // larger than a chunk: never fits
    CHECK(ring.lost() == uint64_t(100 - written + 1));
    ring.release(ring.producer()); // read: the chunk is free again
    CHECK(write_record(ring, 0, 0, 0));
    CHECK(pool.made() == 1);
}

// What a ring holds is bounded by its pool, not by a size of its own: one
// ring takes every chunk the pool allows while nobody reads, and a ring
// that had none takes them once the first is read.
TEST_CASE("local ring: rings share their pool's chunks, taken as they fill", "[local-ring]")
{
    SmallPool pool(8);
    LocalRing first(pool, 16), second(pool, 16);
    int written = 0;
    while (write_record(first, 0, 0, 1))
        ++written;
    CHECK(written == 8 * (4096 / 56));
    CHECK_FALSE(write_record(second, 0, 0, 2)); // every chunk is the first ring's
    CHECK(second.lost() == 1);
    first.release(first.producer()); // read: every chunk goes back to the pool
    int second_written = 0;
    while (write_record(second, 0, 0, 2))
        ++second_written;
    CHECK(second_written == 8 * (4096 / 56));
    CHECK(pool.made() == 8);
}

// A ring may hold no more chunks than its table has entries, however many
// the pool allows.
TEST_CASE("local ring: a ring holds at most its own number of chunks", "[local-ring]")
{
    SmallPool pool(8);
    LocalRing ring(pool, 4);
    int written = 0;
    while (write_record(ring, 0, 0, 1))
        ++written;
    CHECK(written == 4 * (4096 / 56));
    CHECK(pool.made() == 4);
}

// The reader gives up a record it believes abandoned: should its writer
// write on, it writes in a chunk the pool never hands to another ring.
TEST_CASE("local ring: a chunk holding a record the reader gave up is never handed on",
          "[local-ring]")
{
    SmallPool pool(2);
    LocalRing ring(pool, 4);
    pt_record *stalled = ring.reserve(16);
    REQUIRE(stalled);
    REQUIRE(ring.give_up_reported_by_reader(0));
    CHECK(ring.at(0).slot == RecordRing::Slot::Discarded);
    std::memset(stalled->data, 0xee, 16); // the writer, late
    ring.commit(stalled);
    CHECK(ring.at(0).slot == RecordRing::Slot::Discarded);
    int written = 0;
    while (write_record(ring, 0, 0, 1))
        ++written;
    ring.release(ring.producer());
    LocalRing other(pool, 4);
    int other_written = 0;
    while (write_record(other, 0, 0, 2))
        ++other_written;
    CHECK(other_written == 4096 / 56); // the second chunk: the first stays the ring's
    CHECK(pool.made() == 2);
}

// A child of fork (here, while a record is reserved, as when a signal
// handler forks in the middle of posix_trace_event()) finds the ring's
// pages zeroed at the same address: it finishes and writes there, its own,
// and the parent's ring is unchanged.
TEST_CASE("local ring: a child of fork writes to zeroed pages of its own", "[local-ring]")
{
    SmallPool pool(2);
    LocalRing ring(pool, 2);
    REQUIRE(write_record(ring, 16, 0xaa, 1));
    pt_record *unfinished = ring.reserve(16);
    REQUIRE(unfinished);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // A zeroed header claims no room even for a record's header.
        bool zeroed = ring.at(0).slot == RecordRing::Slot::Damaged &&
                      ring.at(0).size == RecordRing::span_of(0);
        unfinished->flags = 0; // as a lane's writer sets them
        unfinished->timestamp_ns = 99;
        std::memset(unfinished->data, 0xcc, 16);
        ring.commit(unfinished);
        bool written = write_record(ring, 16, 0xdd, 3);
        _exit(zeroed && written ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    // The parent's records: its first, committed, and its second, still busy.
    RecordRing::Record first = ring.at(0);
    REQUIRE(first.slot == RecordRing::Slot::Committed);
    CHECK(first.record->timestamp_ns == 1);
    CHECK(first.record->data[0] == 0xaa);
    CHECK(ring.at(first.size).slot == RecordRing::Slot::Busy);
    CHECK(ring.producer() == 2 * first.size);
}

namespace {

struct MergedTally {
    uint64_t delivered = 0, out_of_order = 0, reordered = 0, late = 0, lost = 0;
    uint64_t dropped_older = 0;  // claimed, older than records their writer took back
    std::vector<int> last_index; // of each writer
};

// `writers` threads write `records` records each into a ring of their own
// (taking back their oldest chunks with `overwriting`), stamping after they
// reserve, as the fast path does; the merge runs meanwhile in passes
// `pause` apart, as the drain thread does.
MergedTally merge_while_writing(ChunkPool &pool, uint32_t most_chunks, int writers, int records,
                                LocalRing::ChunkRules *overwriting, std::chrono::microseconds pause)
{
    RingMerger merger;
    std::vector<LocalRing *> rings;
    for (int i = 0; i < writers; ++i) {
        auto ring = std::make_unique<LocalRing>(pool, most_chunks);
        REQUIRE(ring->mapped());
        rings.push_back(ring.get());
        merger.add_ring(std::move(ring), monotonic_now());
    }
    std::atomic<int> writing{writers};
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w)
        threads.emplace_back([&, w] {
            for (int i = 0; i < records; ++i) {
                pt_record *record = rings[size_t(w)]->reserve(16, overwriting);
                if (!record)
                    continue;
                record->flags = 0; // as a lane's writer sets them
                record->timestamp_ns = monotonic_now();
                record->tid = uint32_t(w);
                std::memcpy(record->data, &i, sizeof i);
                rings[size_t(w)]->commit(record);
                if (!overwriting && i % 64 == 0)
                    std::this_thread::yield();
            }
            --writing;
        });
    MergedTally tally;
    tally.last_index.assign(size_t(writers), -1);
    uint64_t last = 0;
    RingMerger::Sinks sinks{[&](const pt_record &record) {
                                tally.out_of_order += record.timestamp_ns < last;
                                last = record.timestamp_ns;
                                int index;
                                std::memcpy(&index, record.data, sizeof index);
                                tally.reordered += index <= tally.last_index[record.tid];
                                tally.last_index[record.tid] = index;
                                ++tally.delivered;
                            },
                            [](SystemEvent &&) {}, [&](const pt_record &) { ++tally.late; }};
    std::deque<SystemEvent> system;
    while (writing > 0 || merger.holding()) {
        merger.merge(monotonic_now(), system, sinks);
        std::this_thread::sleep_for(pause);
    }
    for (auto &thread : threads)
        thread.join();
    merger.merge(monotonic_now() + RingMerger::kClockMarginNs, system, sinks);
    for (LocalRing *ring : rings)
        tally.lost += ring->lost();
    tally.dropped_older = merger.take_dropped_older();
    return tally;
}

} // namespace

// What comes out is in timestamp order, and written = delivered + lost,
// exactly.
TEST_CASE("local ring: two writing threads merged while they write: in order, none missing",
          "[local-ring]")
{
    ChunkPool pool(64 * 1024, 64);
    pool.allow(8); // 256 KiB a writer
    MergedTally tally =
        merge_while_writing(pool, 4, 2, 300'000, nullptr, std::chrono::microseconds(200));
    INFO(tally.delivered << " delivered, " << tally.lost << " lost");
    CHECK(tally.out_of_order == 0);
    CHECK(tally.reordered == 0);
    CHECK(tally.late == 0);
    CHECK(tally.delivered + tally.lost == 2 * 300'000);
    CHECK(tally.delivered > 0);
}

namespace {

// Every record a reader finds in `ring` from its last release on, as the
// merge reads it (a window at a time, past what the writer took back); the
// first 4 bytes of each record's data, in the order read.
std::vector<int> read_indexes(LocalRing &ring)
{
    std::vector<int> indexes;
    uint64_t scanned = ring.released();
    for (;;) {
        RecordRing::Readable readable = ring.readable(scanned);
        while (scanned < readable.end) {
            RecordRing::Record next = ring.at(scanned);
            REQUIRE(next.slot != RecordRing::Slot::Busy);
            if (next.slot == RecordRing::Slot::Committed) {
                int index;
                std::memcpy(&index, next.record->data, sizeof index);
                indexes.push_back(index);
            }
            scanned += next.size;
        }
        ring.release(scanned);
        if (!readable.more)
            return indexes;
    }
}

bool write_indexed(LocalRing &ring, int index, LocalRing::ChunkRules *overwriting)
{
    pt_record *record = ring.reserve(sizeof index, overwriting);
    if (!record)
        return false;
    record->flags = 0; // as a lane's writer sets them
    record->timestamp_ns = monotonic_now();
    record->data_len = sizeof index;
    std::memcpy(record->data, &index, sizeof index);
    ring.commit(record);
    return true;
}

} // namespace

// POSIX_TRACE_LOOP in a lane: with no chunk left in the pool, the writer
// takes back its oldest chunk nobody claimed, so the newest records stay,
// and every record is read or counted overwritten. The memory stays the
// pool's: no chunk is made past what it allows, none is lost to it.
TEST_CASE("local ring: a ring that overwrites keeps its newest records, the oldest counted",
          "[local-ring]")
{
    SmallPool pool(3);
    LocalRing ring(pool, 64);
    LocalRing::ChunkRules overwriting;
    overwriting.after_bytes = UINT64_MAX; // when the pool has none
    std::atomic<uint64_t> &overwritten = overwriting.counted;
    int next = 0;
    for (int round = 0; round < 5; ++round) {
        int first = next;
        overwritten = 0;
        for (int i = 0; i < 1000; ++i)
            REQUIRE(write_indexed(ring, next++, &overwriting));
        std::vector<int> indexes = read_indexes(ring);
        REQUIRE_FALSE(indexes.empty());
        CHECK(indexes.back() == next - 1);
        // The newest, in one range; after the first round, behind what is
        // left of the chunk the reader had claimed part of (not the
        // writer's to take back).
        size_t ranges = 1;
        for (size_t i = 1; i < indexes.size(); ++i) {
            REQUIRE(indexes[i] > indexes[i - 1]);
            ranges += indexes[i] != indexes[i - 1] + 1;
        }
        CHECK(ranges == (round == 0 ? 1 : 2));
        if (round > 0)
            CHECK(indexes.front() == first);
        CHECK(indexes.size() + overwritten.load() == size_t(next - first));
        CHECK(overwritten.load() > 0);
        CHECK(ring.lost() == 0);
        CHECK(pool.made() == 3);
        CHECK(pool.taken() <= 1); // the chunk written last stays the ring's
    }
    // Without a reader the ring takes back chunks until its table has no
    // entry left: then it drops the newest, counted, as any full ring.
    int written = 0;
    while (write_indexed(ring, next++, &overwriting))
        ++written;
    CHECK(written > 50 * 4096 / 60);
    CHECK(ring.lost() == 1);
    std::vector<int> indexes = read_indexes(ring);
    REQUIRE_FALSE(indexes.empty());
    CHECK(indexes.back() == next - 2);
}

// The writers take chunks back while the merge reads their rings (behind
// them on purpose): what the merge claimed it keeps, what comes out is in
// order and ends with each writer's newest, and written = delivered +
// overwritten + lost, exactly.
TEST_CASE("local ring: overwriting writers merged while they write: in order, all counted",
          "[local-ring]")
{
    ChunkPool pool(64 * 1024, 64);
    pool.allow(16);
    LocalRing::ChunkRules overwriting;
    overwriting.after_bytes = 4 * 64 * 1024;
    std::atomic<uint64_t> &overwritten = overwriting.counted;
    MergedTally tally =
        merge_while_writing(pool, 8192, 2, 300'000, &overwriting, std::chrono::milliseconds(2));
    INFO(tally.delivered << " delivered, " << overwritten.load() << " overwritten, " << tally.lost
                         << " lost");
    CHECK(tally.out_of_order == 0);
    CHECK(tally.reordered == 0);
    CHECK(tally.late == 0);
    CHECK(tally.delivered + overwritten.load() + tally.dropped_older + tally.lost == 2 * 300'000);
    CHECK(overwritten.load() > 0);
    CHECK(tally.last_index == std::vector<int>(2, 300'000 - 1));
    CHECK(pool.made() <= 16);
}

// A writer that overwrites once it holds its share leaves the pool's other
// chunks to the other rings, however long it writes.
TEST_CASE("local ring: a ring that overwrites past its share leaves the pool to others",
          "[local-ring]")
{
    SmallPool pool(8);
    LocalRing busy(pool, 512), other(pool, 64); // room in its table for what it writes
    LocalRing::ChunkRules overwriting;
    overwriting.after_bytes = 2 * 4096;
    std::atomic<uint64_t> &overwritten = overwriting.counted;
    for (int i = 0; i < 10'000; ++i)
        REQUIRE(write_indexed(busy, i, &overwriting));
    CHECK(pool.taken() == 2); // its share, the chunk it writes among them
    CHECK(overwritten.load() > 0);
    int written = 0;
    while (write_indexed(other, written, nullptr))
        ++written;
    CHECK(written == 6 * (4096 / 64)); // 64-byte records
    std::vector<int> indexes = read_indexes(busy);
    REQUIRE_FALSE(indexes.empty());
    CHECK(indexes.back() == 9'999);
    CHECK(indexes.size() + overwritten.load() == 10'000);
}
