#pragma once
#include <trace.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "emit/lanes.hpp"

namespace posixtrace {

class RingMerger;
struct LaneControl;

// The stream's side of the lanes (emit/lanes.hpp; docs/architecture.md,
// "Lanes"): held by the one stream that takes the fast path.
class LaneAttachment {
public:
    // The fast path for a stream of the calling process; nullptr if another
    // stream holds it or the control could not be mapped. The lanes hold at
    // most `budget_bytes` at once, besides a chunk a thread (what an idle
    // thread keeps), taken as they fill and handed back as the merge reads
    // them. `now_ns`: CLOCK_MONOTONIC, read before the call; the lanes that
    // exist are skipped (what they hold belongs to an earlier stream) and
    // join `merger` now.
    static std::unique_ptr<LaneAttachment> attach(size_t budget_bytes, uint32_t max_data_size,
                                                  RingMerger &merger, uint64_t now_ns);
    explicit LaneAttachment(LaneControl &control); // see attach()
    ~LaneAttachment();                             // the fast path is free again; the lanes stay
    LaneAttachment(const LaneAttachment &) = delete;
    LaneAttachment &operator=(const LaneAttachment &) = delete;

    // Both with the kernel's own (KernelProgram): before the caller stamps
    // the change, so a record stamped after it sees it.
    void set_state(pt_stream_state state);
    void set_filter(const trace_event_set_t &filtered);

    // Lanes created since the previous call join `merger`. `now_ns` is
    // CLOCK_MONOTONIC read before the call: lanes published after the list
    // is read here hold only records stamped after it.
    void adopt_new_lanes(RingMerger &merger, uint64_t now_ns);
    // Lanes of threads that exited are given back, their unfinished records
    // discarded and counted lost (a thread can only leave one so through a
    // signal handler).
    // Returns how many lanes live threads own.
    size_t reclaim_lanes_of_exited_threads();
    // (A record a thread left busy for good is given up by the lane's view
    // in the merge: RingMerger::pass_abandoned_records, lanes.cpp LaneView.)

    // Events that found no room: a full lane, no lane (signal handlers
    // nested too deep, no memory for one). Only grows.
    uint64_t lost() const;
    // Events refused while POSIX_TRACE_UNTIL_FULL had stopped the stream.
    uint64_t refused_while_full() const;

private:
    LaneControl &control_;
    Lane *adopted_head_ = nullptr; // the newest lane already in the merge
    uint64_t listed_after_ns_ = 0; // the clock read before the list was last read
    size_t budget_chunks_ = 0;     // what the stream allows the lanes, besides a chunk a thread
    uint64_t lost_before_ = 0, refused_before_ = 0;
};

} // namespace posixtrace
