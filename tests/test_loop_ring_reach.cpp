// The merge (RingMerger) of a loop ring read through LoopRingMirror, whose
// copy lets the merge read only so far past the records it holds back,
// while the programs write on regardless: the orders of looks and writes
// that could leave the position the merge's bound waits for out of its
// reach, with nothing to move it again, made to happen on purpose.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <vector>

#include "loop_ring_support.hpp"
#include "memory_ring_support.hpp"
#include "sources/kernel/loop_ring_mirror.hpp"
#include "stream/ring_merger.hpp"

namespace {

using posixtrace::LoopRingMirror;
using posixtrace::RingMerger;
using posixtrace::SystemEvent;

constexpr uint64_t kMargin = RingMerger::kClockMarginNs;
constexpr uint64_t ms = 1'000'000;

// A loop ring merged through its mirror, with a ring in memory beside it
// whose record still being written can hold the merge back.
struct LoopMerge {
    LoopMerge()
    {
        merger.add_ring(
            std::make_unique<LoopRingMirror>(ring.entry(), kRingBytes, kKey, overwritten), 0);
        auto memory = std::make_unique<MemoryRing>();
        beside = memory.get();
        merger.add_ring(std::move(memory), 0);
    }
    void pass(uint64_t now_ns)
    {
        RingMerger::Sinks sinks{
            [this](const pt_record &record) { delivered.push_back(record.timestamp_ns); },
            [](SystemEvent &&) {},
            [this](const pt_record &record) { late.push_back(record.timestamp_ns); }};
        merger.merge(now_ns, system, sinks);
        looked_ns = now_ns;
    }
    void emit(uint64_t stamp)
    {
        ring.emit(stamp);
        ++emitted;
    }
    // Records reserved after the latest look, so stamped after it, while the
    // next ends at or before `limit`.
    void emit_up_to(uint64_t limit)
    {
        while (ring.next_end() <= limit)
            emit(looked_ns + 1000 + emitted);
    }
    // Every record emitted (and `also` more) was delivered once, in order,
    // and none was lost.
    void check_all_delivered(size_t also = 0) const
    {
        CHECK(delivered.size() == emitted + also);
        CHECK(std::is_sorted(delivered.begin(), delivered.end()));
        CHECK(late.empty());
        CHECK(overwritten == 0);
    }

    LoopRingWriter ring;
    std::atomic<uint64_t> overwritten{0};
    RingMerger merger;
    MemoryRing *beside = nullptr;
    std::deque<SystemEvent> system;
    std::vector<uint64_t> delivered, late;
    uint64_t emitted = 0, looked_ns = 0;
};

constexpr uint64_t kSpan = LoopRingWriter::span();

} // namespace

// The look at 10 ms copied everything, the last records stamped within the
// clock margin before it (so held back); then the programs wrote a whole
// round, overwriting nothing the copy had not taken. The merge reads up to
// the producer it saw at the next look, past all the copy held back.
TEST_CASE_METHOD(LoopMerge, "loop ring merge: a round written between two looks is read to its end",
                 "[loop-ring][merge]")
{
    emit_up_to(kRingBytes / 2);
    for (int i = 0; i < 100; ++i)
        emit(10 * ms - kMargin / 2);
    pass(10 * ms);
    CHECK(delivered.size() == emitted - 100);
    emit_up_to(ring.head() + kRingBytes);
    for (uint64_t at = 11; at <= 14; ++at)
        pass(at * ms);
    check_all_delivered();
}

// The ring beside holds the merge back while the copy is full and the
// programs creep on, a record between looks, to a round past it: many more
// looks than the merge keeps. The look it must reach next stays within the
// copy's reach once the ring beside lets go.
TEST_CASE_METHOD(LoopMerge,
                 "loop ring merge: looks while the merge is held leave its next bound within reach",
                 "[loop-ring][merge]")
{
    uint64_t held = beside->reserve(0);
    emit_up_to(kRingBytes / 2);
    pass(ms / 2);
    emit_up_to(kRingBytes + 3 * kSpan - 100 * kSpan);
    for (int i = 0; i < 100; ++i)
        emit(1 * ms - kMargin / 2);
    pass(1 * ms);
    emit_up_to(ring.head() + kRingBytes); // past the copy's room: the rest waits
    pass(2 * ms);
    const uint64_t programs_reach = 3 * kRingBytes; // a round past the copy's end
    emit_up_to(programs_reach - 70 * kSpan);
    pass(3 * ms);
    for (uint64_t at = 4; ring.next_end() <= programs_reach; ++at) {
        emit(looked_ns + 1000);
        pass(at * ms);
    }
    CHECK(delivered.empty());
    beside->commit(held, ms / 2);
    for (uint64_t at = 100; at < 110; ++at)
        pass(at * ms);
    check_all_delivered(1);
}
