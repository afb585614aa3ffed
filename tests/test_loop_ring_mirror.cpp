// The loop rings of POSIX_TRACE_LOOP streams, read through LoopRingMirror:
// here the ring's memory is written by the test as the BPF programs write
// it (stream.bpf.h), so that each order of events a reader can meet is
// met on purpose. The by-pid tests run the real programs.
#include <catch2/catch.hpp>
#include <linux/bpf.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "loop_ring_support.hpp"
#include "posixtrace.h"
#include "sources/kernel/loop_ring_mirror.hpp"

namespace {

using posixtrace::LoopRingMirror;
using posixtrace::RecordRing;

struct Read {
    std::vector<uint64_t> stamps;
    RecordRing::Readable readable{};
};

// A pass of the drain: the counts read (after a look, as KernelSource
// does), then what the merge may read, read to its end and released, again
// while the ring says there is more (the copy waited for room).
Read look(LoopRingMirror &mirror, uint64_t &scanned)
{
    Read read;
    mirror.refresh();
    mirror.count_read();
    for (int round = 0; round < 4; ++round) {
        mirror.refresh();
        read.readable = mirror.readable(scanned);
        if (read.readable.taken_back) { // the merge drops what lies before the stretch
            scanned = read.readable.end;
            read.readable = mirror.readable(scanned);
        }
        while (scanned < read.readable.end) {
            RecordRing::Record record = mirror.at(scanned);
            REQUIRE(record.slot != RecordRing::Slot::Damaged);
            REQUIRE(record.slot != RecordRing::Slot::Busy);
            if (record.slot == RecordRing::Slot::Committed)
                read.stamps.push_back(record.record->timestamp_ns);
            scanned += record.size;
        }
        mirror.release(scanned);
        if (!read.readable.more)
            break;
    }
    return read;
}

// Passes of the drain after the merge passed a stretch: the first copies
// what follows it, the next reads it once its count was read.
Read looks(LoopRingMirror &mirror, uint64_t &scanned, int passes)
{
    Read read;
    for (int pass = 0; pass < passes; ++pass) {
        Read more = look(mirror, scanned);
        read.stamps.insert(read.stamps.end(), more.stamps.begin(), more.stamps.end());
        read.readable = more.readable;
    }
    return read;
}

// A ring as the programs write it, and the mirror the merge reads it through.
struct MirroredRing {
    LoopRingWriter ring;
    std::atomic<uint64_t> overwritten{0};
    LoopRingMirror mirror{ring.entry(), kRingBytes, kKey, overwritten};
    uint64_t scanned = mirror.released();
};

} // namespace

TEST_CASE_METHOD(MirroredRing, "loop ring: records are read at their positions, padding passed",
                 "[loop-ring]")
{
    std::vector<uint64_t> stamps;
    for (uint64_t stamp = 1; stamp <= 300; ++stamp) { // past two chunks' ends
        ring.emit(stamp);
        if (stamp % 50 == 0) {
            Read read = look(mirror, scanned);
            CHECK(read.readable.claimed);
            stamps.insert(stamps.end(), read.stamps.begin(), read.stamps.end());
        }
    }
    std::vector<uint64_t> expected;
    for (uint64_t stamp = 1; stamp <= 300; ++stamp)
        expected.push_back(stamp);
    CHECK(stamps == expected);
    CHECK(mirror.producer() == ring.head());
    CHECK(overwritten == 0);
}

TEST_CASE_METHOD(MirroredRing,
                 "loop ring: a record being written holds the copy until it is committed",
                 "[loop-ring]")
{
    ring.emit(1);
    uint64_t busy = ring.reserve();
    ring.write(busy, 2);
    ring.emit(3);
    Read read = look(mirror, scanned);
    CHECK(read.stamps == std::vector<uint64_t>{1});
    CHECK_FALSE(read.readable.claimed);
    CHECK(scanned == busy);
    CHECK(mirror.producer() == ring.head()); // the merge's bound stays before it
    ring.commit(busy);
    read = look(mirror, scanned);
    CHECK(read.stamps == std::vector<uint64_t>{2, 3});
    CHECK(read.readable.claimed);
}

// Between a program's reservation and its header, the ring holds what an
// earlier round left there, which a traced process's payload can shape as
// a committed header: without the stream's key in its tag it is not one.
TEST_CASE_METHOD(MirroredRing, "loop ring: a header a traced process's data forged is not read",
                 "[loop-ring]")
{
    ring.emit(1);
    uint64_t reserved = ring.reserve();
    ring.forge(reserved, reserved - kRingBytes); // a real header of the round before
    Read read = look(mirror, scanned);
    CHECK(read.stamps == std::vector<uint64_t>{1});
    CHECK(scanned == reserved);
    // Bytes with no key: the tag holds whatever the payload wanted.
    std::memset(ring.header(reserved), 0, sizeof(pt_loop_header));
    ring.header(reserved)->length = 200;
    ring.header(reserved)->tag = reserved;
    read = look(mirror, scanned);
    CHECK(read.stamps.empty());
    CHECK(scanned == reserved);
    ring.write(reserved, 2);
    ring.commit(reserved);
    read = look(mirror, scanned);
    CHECK(read.stamps == std::vector<uint64_t>{2});
    CHECK(overwritten == 0);
}

// The drain was late: the programs came round over records not copied. The
// copy goes on with the newest, the merge drops what it held older than
// the stretch, and every record overwritten is counted once.
TEST_CASE_METHOD(MirroredRing,
                 "loop ring: records overwritten before the copy are counted, the newest read",
                 "[loop-ring]")
{
    ring.emit(1);
    Read read = look(mirror, scanned);
    CHECK(read.stamps == std::vector<uint64_t>{1});
    const uint64_t emitted = 5000; // 3 rounds and more of the ring
    for (uint64_t stamp = 2; stamp <= emitted; ++stamp)
        ring.emit(stamp);
    mirror.refresh();
    RecordRing::Readable readable = mirror.readable(scanned);
    CHECK(readable.taken_back);
    CHECK(readable.end == scanned); // nothing copied before the stretch
    read = looks(mirror, scanned, 2);
    REQUIRE(!read.stamps.empty());
    CHECK(read.stamps.back() == emitted);
    for (size_t i = 1; i < read.stamps.size(); ++i)
        CHECK(read.stamps[i] == read.stamps[i - 1] + 1);
    CHECK(read.stamps.size() * (PT_RECORD_HEADER_SIZE + kRecordData) > kRingBytes / 2);
    CHECK(overwritten == emitted - 1 - read.stamps.size());
}

// The report of what the programs overwrote must come before the records
// that follow the stretch: those wait, unclaimed, until a look after the
// one that found the stretch has counted it and the count was read.
TEST_CASE_METHOD(MirroredRing, "loop ring: the records past a stretch wait until its count is read",
                 "[loop-ring]")
{
    const uint64_t emitted = 5000;
    for (uint64_t stamp = 1; stamp <= emitted; ++stamp)
        ring.emit(stamp);
    mirror.refresh();
    mirror.count_read(); // before the stretch was counted
    RecordRing::Readable readable = mirror.readable(scanned);
    REQUIRE(readable.taken_back);
    scanned = readable.end;
    for (int round = 0; round < 3; ++round) { // copied and counted, the count not read
        mirror.refresh();
        readable = mirror.readable(scanned);
        CHECK(readable.end == scanned);
        CHECK_FALSE(readable.claimed);
        mirror.release(scanned);
    }
    Read read = looks(mirror, scanned, 1);
    REQUIRE(!read.stamps.empty());
    CHECK(read.stamps.back() == emitted);
    CHECK(overwritten == emitted - read.stamps.size());
}

// The programs go on while the merge waits for the count: once the copy
// has no room left, the records held are the ring's oldest, and go as the
// programs' would, taken back; what is read in the end is the newest, and
// every record is read or counted once.
TEST_CASE_METHOD(MirroredRing,
                 "loop ring: records held past a stretch are taken back when the copy needs room",
                 "[loop-ring]")
{
    uint64_t stamp = 0, taken_back = 0;
    for (int burst = 0; burst < 6; ++burst) {
        for (int i = 0; i < 700; ++i) // most of the ring's room
            ring.emit(++stamp);
        mirror.refresh(); // the count is not read meanwhile
        for (int round = 0; round < 4; ++round) {
            RecordRing::Readable readable = mirror.readable(scanned);
            if (!readable.taken_back)
                break;
            for (; scanned < readable.end; scanned += mirror.at(scanned).size)
                taken_back += mirror.at(scanned).slot == RecordRing::Slot::Committed;
            mirror.release(scanned);
            mirror.refresh();
        }
    }
    Read read = looks(mirror, scanned, 3);
    REQUIRE(!read.stamps.empty());
    CHECK(read.stamps.back() == stamp);
    for (size_t i = 1; i < read.stamps.size(); ++i)
        CHECK(read.stamps[i] == read.stamps[i - 1] + 1);
    CHECK(taken_back > 0);
    CHECK(overwritten + taken_back + read.stamps.size() == stamp);
}
