#pragma once
#include <sys/types.h>
#include <trace.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "posixtrace.h"
#include "sources/lanes/local_ring.hpp"

namespace posixtrace {

// The in-process fast path of posix_trace_event() (docs/architecture.md,
// "Lanes"). A stream that traces its own process, without inheritance, takes
// the process's user events from lanes instead of the uprobe: rings in the
// process's memory, one per emitting thread and nesting level, that the
// emitting thread writes with plain stores and the stream's drain thread
// merges with the kernel's rings.
//
// Lanes and their control are the process's, not a stream's: they are never
// unmapped, so an emitter that raced with the end of a stream never touches
// freed memory, and the next stream that traces the process reuses them.
// One stream at a time takes the fast path; others use the uprobe.

// A ring and who writes it.
struct Lane {
    Lane(ChunkPool &chunks, uint32_t most_chunks) : ring(chunks, most_chunks) {}
    LocalRing ring;
    std::atomic<pid_t> owner{0}; // the writing thread's tid; 0: free
    // The owner's record of its calls in progress, and the nesting level it
    // writes this lane at: where the drain finds the frame of the call that
    // holds a record busy.
    std::atomic<const void *> owner_calls{nullptr};
    std::atomic<unsigned> owner_level{0};
    Lane *next = nullptr; // the process's list of lanes, newest first
};

// What the emit path reads: the stream's state and filter, mirrored from
// what the kernel side reads, and the list of lanes.
struct LaneControl;

// What posix_trace_event() reads before it calls into the lanes: whether a
// stream that takes the fast path records (runs, or is full and counts what
// it refuses), and the user event types its filter drops. An untraced call,
// one to a suspended stream and one of a type filtered out each cost a few
// loads and branches, and no call. The emit path reads the filter here
// again once the record is stamped.
struct alignas(64) LaneGate {
    std::atomic<uint32_t> open{0};
    std::atomic<uint64_t> filtered[PT_EVENT_USDT_FIRST / 64]{};

    // No user event of type `id` is recorded: the lanes' stream filters it
    // out, or it is no user event type.
    bool shut_for(trace_event_id_t id) const
    {
        return id >= PT_EVENT_USDT_FIRST ||
               ((filtered[id / 64].load(std::memory_order_relaxed) >> (id % 64)) & 1);
    }
};
extern LaneGate lane_gate;

// Emits one user event into the calling thread's lane if a stream takes the
// fast path; the caller found the gate open for its type. Async-signal-safe;
// no lock, no system call once the thread has its lane.
void emit_to_lanes(trace_event_id_t event_id, const void *data, size_t data_len, void *caller);

} // namespace posixtrace
