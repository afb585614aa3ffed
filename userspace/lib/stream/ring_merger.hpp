#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "posixtrace.h"
#include "stream/ring_reader.hpp"

namespace posixtrace {

// An event the library generates (start, stop, filter, loss reports), queued
// in timestamp order until the merge reaches it.
struct SystemEvent {
    std::vector<uint8_t> data;
    pt_record header; // timestamp in CLOCK_MONOTONIC
};

// Merges the per-CPU rings and the queue of system events into one sequence
// in timestamp order, up to a watermark: a heap holds the oldest record of
// every source, read in place. A ring whose oldest record is still being
// written lowers the watermark to the latest time that record is known to be
// younger than (its floor): the previous record's timestamp, or the last
// time the ring was seen empty.
class RingMerger {
public:
    using RingSink = std::function<void(const pt_record &)>;
    using SystemSink = std::function<void(SystemEvent &&)>;

    void add_ring(RingReader ring);
    bool ready() const { return !rings_.empty() && rings_.back().mapped(); }

    // Delivers every record stamped before `watermark_ns` (and before the
    // start of the pass), oldest first; `pass_start_ns` is CLOCK_MONOTONIC
    // read before the rings are looked at.
    void merge(uint64_t watermark_ns, uint64_t pass_start_ns, std::deque<SystemEvent> &system,
               const RingSink &on_record, const SystemSink &on_system);
    // Drops every committed record; returns how many.
    uint64_t discard_all();

private:
    struct Delivery {
        uint64_t timestamp_ns;
        const pt_record *record; // in a ring; nullptr for a system event
        size_t system_index;
    };
    void deliver_batch(bool in_order, const RingSink &on_record, const SystemSink &on_system);

    std::vector<RingReader> rings_;
    std::vector<uint64_t> floors_ns_;
    std::vector<Delivery> batch_;           // one pass, reused
    std::vector<SystemEvent> system_batch_; // its system events
};

} // namespace posixtrace
