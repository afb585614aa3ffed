#pragma once
#include <trace.h>

#include <cstdint>
#include <vector>

#include "posixtrace.h"
#include "stream/ring_merger.hpp"

namespace posixtrace {

// Some of the ring-full losses counted since the previous look, and the
// latest time they are known to come after (CLOCK_MONOTONIC; 0: unknown).
struct PlacedLoss {
    uint64_t after_ns = 0;
    uint64_t count = 0;
};

// What a source's rings could not take, counted since the stream began.
// Each count only grows. `placed`: where the ring-full losses counted since
// the previous look began, for a source that can tell.
struct SourceLosses {
    uint64_t ring_full = 0;           // no room in a ring
    uint64_t unreported_switches = 0; // switches a thread report could not carry
    uint64_t refused_while_full = 0;  // refused while UNTIL_FULL had stopped the stream
    uint64_t overwritten = 0;         // taken back from a ring to make room (LOOP)
    std::vector<PlacedLoss> placed;

    SourceLosses &operator+=(const SourceLosses &other)
    {
        ring_full += other.ring_full;
        unreported_switches += other.unreported_switches;
        refused_while_full += other.refused_while_full;
        overwritten += other.overwritten;
        placed.insert(placed.end(), other.placed.begin(), other.placed.end());
        return *this;
    }
};

// Where a stream's records come from: rings in the BPF ring buffer's
// layout, written by the kernel (KernelSource) or by the process's own
// threads (LaneSource), that the merge reads alike. The stream asks every
// source the same things and never which kind it is.
class RecordSource {
public:
    virtual ~RecordSource() = default;

    // Both before the caller stamps the change, so that a record stamped
    // after it sees it.
    virtual void set_state(pt_stream_state state) = 0;
    virtual void set_filter(const trace_event_set_t &filtered) = 0;
    // Rings made since the last call join `merger`. `now_ns` is
    // CLOCK_MONOTONIC read before the call: a ring made after it holds only
    // records stamped later.
    virtual void join_merge(RingMerger &merger, uint64_t now_ns) = 0;
    // Upkeep between two merge passes; the records it gave up, for the
    // stream to report where they were lost.
    virtual RingMerger::GivenUp look_after(RingMerger &, uint64_t /*now_ns*/) { return {}; }
    // Descriptors that turn readable as records come (the drain waits on them).
    virtual std::vector<int> readable_fds() const { return {}; }
    // The drain sleeps longer than its period from now on, as nothing came
    // for a while: a source whose rings do not make a descriptor readable
    // as they fill has them do so from now until the next record comes
    // that is worth waking for.
    virtual void doze() {}
    // Looks at the counts: `placed` holds what was counted since the
    // previous look.
    virtual SourceLosses losses() = 0;
    // The one count UNTIL_FULL needs between two looks (no placing).
    virtual uint64_t refused_while_full() const = 0;
};

} // namespace posixtrace
