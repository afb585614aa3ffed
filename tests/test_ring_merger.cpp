// The merge of rings (RingMerger) on rings written here, record by record,
// in the layout and protocol of a BPF ring buffer: the orders a real stream
// meets only by chance (a record still being written at a ring's head, one
// that interrupted another, a clock that went back) made to happen on
// purpose. The kernel's rings are tested end to end elsewhere.
#include <catch2/catch.hpp>
#include <linux/bpf.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "memory_ring_support.hpp"
#include "stream/record_ring.hpp"
#include "stream/ring_merger.hpp"

using posixtrace::RecordRing;
using posixtrace::RingMerger;
using posixtrace::SystemEvent;

namespace {

// A merge of `count` memory rings, added at time `added_ns`, and what it
// delivers.
struct Merge {
    explicit Merge(int count, uint64_t added_ns = 0)
    {
        for (int i = 0; i < count; ++i) {
            auto ring = std::make_unique<MemoryRing>();
            rings.push_back(ring.get());
            merger.add_ring(std::move(ring), added_ns);
        }
    }
    uint64_t pass(uint64_t now_ns)
    {
        RingMerger::Sinks sinks{
            [this](const pt_record &record) {
                delivered.push_back(record.timestamp_ns);
                sources += 'r';
            },
            [this](SystemEvent &&event) {
                delivered.push_back(event.header.timestamp_ns);
                sources += 's';
            },
            [this](const pt_record &record) { late.push_back(record.timestamp_ns); }};
        return merger.merge(now_ns, system, sinks);
    }
    void queue_system(uint64_t timestamp_ns)
    {
        SystemEvent event;
        event.header.timestamp_ns = timestamp_ns;
        system.push_back(std::move(event));
    }

    RingMerger merger;
    std::vector<MemoryRing *> rings;
    std::deque<SystemEvent> system;
    std::vector<uint64_t> delivered, late;
    std::string sources; // 'r' a ring's record, 's' a system event, in delivery order
};

constexpr uint64_t kMargin = RingMerger::kClockMarginNs;
constexpr uint64_t ms = 1'000'000;

} // namespace

TEST_CASE("merge: the records of several rings come out in timestamp order", "[merge]")
{
    Merge merge(3);
    merge.rings[0]->write(1 * ms);
    merge.rings[0]->write(4 * ms);
    merge.rings[1]->write(2 * ms);
    merge.rings[1]->write(5 * ms);
    merge.rings[2]->write(3 * ms);
    uint64_t safe = merge.pass(10 * ms);
    CHECK(safe == 10 * ms - kMargin); // every ring was read to its producer at 10 ms
    CHECK(merge.delivered == std::vector<uint64_t>{1 * ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms});
    CHECK(merge.late.empty());
    CHECK_FALSE(merge.merger.holding());
    for (MemoryRing *ring : merge.rings)
        CHECK(ring->released() == ring->producer());
}

TEST_CASE("merge: nothing stamped within the clock margin of the last look is delivered", "[merge]")
{
    Merge merge(1);
    merge.rings[0]->write(10 * ms - kMargin / 2);
    merge.pass(10 * ms);
    CHECK(merge.delivered.empty());
    CHECK(merge.merger.holding());
    merge.pass(11 * ms);
    CHECK(merge.delivered == std::vector<uint64_t>{10 * ms - kMargin / 2});
}

TEST_CASE("merge: a record still being written holds back every younger record", "[merge]")
{
    Merge merge(2, 1 * ms);
    uint64_t writing = merge.rings[0]->reserve(8); // reserved after the look at 1 ms
    merge.rings[1]->write(3 * ms);
    merge.rings[1]->write(4 * ms);
    // Ring 0 may still hand over a record stamped just after 1 ms.
    uint64_t safe = merge.pass(5 * ms);
    CHECK(safe == 1 * ms - kMargin);
    CHECK(merge.delivered.empty());
    CHECK(merge.rings[0]->released() == writing); // its space stays the writer's
    merge.rings[0]->commit(writing, 2 * ms);
    merge.pass(6 * ms);
    CHECK(merge.delivered == std::vector<uint64_t>{2 * ms, 3 * ms, 4 * ms});
    CHECK(merge.late.empty());
}

// A program that interrupts another between its reservation and its stamp
// stamps first but sits second in the ring.
TEST_CASE("merge: a record that interrupted another comes out before it", "[merge]")
{
    Merge merge(2, 1 * ms);
    MemoryRing &ring = *merge.rings[0];
    uint64_t outer = ring.reserve(16);
    uint64_t inner = ring.reserve(0);
    ring.commit(inner, 2 * ms);
    merge.rings[1]->write(3 * ms);
    merge.pass(5 * ms); // the inner record is committed, but behind the outer one
    CHECK(merge.delivered.empty());
    ring.commit(outer, 2 * ms + 500);
    merge.pass(6 * ms);
    CHECK(merge.delivered == std::vector<uint64_t>{2 * ms, 2 * ms + 500, 3 * ms});
    CHECK(ring.released() == ring.producer());
}

TEST_CASE("merge: discarded records are skipped and their space given back", "[merge]")
{
    Merge merge(1);
    MemoryRing &ring = *merge.rings[0];
    ring.write(1 * ms);
    ring.discard(ring.reserve(32));
    ring.write(2 * ms);
    merge.pass(5 * ms);
    CHECK(merge.delivered == std::vector<uint64_t>{1 * ms, 2 * ms});
    CHECK(ring.released() == ring.producer());
}

// Only a ring in the process's own memory can hold one: the process wrote
// over its lane. Its data would be read past its slot.
TEST_CASE("merge: a record whose data or header do not fit its slot is passed and counted",
          "[merge]")
{
    Merge merge(1);
    MemoryRing &ring = *merge.rings[0];
    ring.write(1 * ms);
    ring.commit(ring.reserve(8), 2 * ms, 100, 4000);
    ring.commit(ring.reserve(8), 3 * ms, 100, 9); // one byte too many
    ring.write_short(PT_RECORD_HEADER_SIZE - 1);
    ring.commit(ring.reserve(8), 4 * ms, 100, 8); // fills its slot exactly: whole
    RecordRing::Record at = ring.at(0);
    REQUIRE(at.slot == RecordRing::Slot::Committed);
    CHECK(ring.at(at.size).slot == RecordRing::Slot::Damaged);
    merge.pass(10 * ms);
    CHECK(merge.delivered == std::vector<uint64_t>{1 * ms, 4 * ms});
    CHECK(merge.merger.take_damaged() == 3);
    CHECK(merge.merger.take_damaged() == 0);
    CHECK(ring.released() == ring.producer());
}

TEST_CASE("merge: system events interleave by time, first on a tie, never before what was "
          "delivered",
          "[merge]")
{
    Merge merge(1);
    merge.rings[0]->write(2 * ms);
    merge.rings[0]->write(3 * ms);
    merge.queue_system(1 * ms);
    merge.queue_system(3 * ms);
    merge.pass(5 * ms);
    CHECK(merge.delivered == std::vector<uint64_t>{1 * ms, 2 * ms, 3 * ms, 3 * ms});
    CHECK(merge.sources == "srsr");
    // A system event stamped before the last delivery takes that stamp.
    merge.queue_system(4 * ms);
    merge.rings[0]->write(4 * ms + 100);
    merge.pass(6 * ms);
    merge.queue_system(4 * ms);
    merge.pass(7 * ms);
    CHECK(merge.delivered.back() == 4 * ms + 100);
    CHECK(std::is_sorted(merge.delivered.begin(), merge.delivered.end()));
}

// Only a clock that breaks the argument (a record reserved after a look,
// stamped before it) can do this; the record is dropped, not delivered out
// of order.
TEST_CASE("merge: a record older than what was delivered goes to the late sink", "[merge]")
{
    Merge merge(2);
    merge.rings[0]->write(4 * ms);
    merge.pass(10 * ms);
    REQUIRE(merge.delivered == std::vector<uint64_t>{4 * ms});
    merge.rings[1]->write(3 * ms);
    merge.rings[1]->write(11 * ms);
    merge.pass(20 * ms);
    CHECK(merge.late == std::vector<uint64_t>{3 * ms});
    CHECK(merge.delivered == std::vector<uint64_t>{4 * ms, 11 * ms});
}

TEST_CASE("merge: discard_all hands over every committed record, not one being written", "[merge]")
{
    Merge merge(1);
    MemoryRing &ring = *merge.rings[0];
    ring.write(1 * ms);
    uint64_t writing = ring.reserve(0);
    std::vector<uint64_t> discarded;
    merge.merger.discard_all(
        [&](const pt_record &record) { discarded.push_back(record.timestamp_ns); });
    CHECK(discarded == std::vector<uint64_t>{1 * ms});
    CHECK(ring.released() == writing);
    ring.commit(writing, 2 * ms);
    merge.pass(5 * ms);
    CHECK(merge.delivered == std::vector<uint64_t>{2 * ms});
}
