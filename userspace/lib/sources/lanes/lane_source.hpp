#pragma once
#include <trace.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "emit/lanes.hpp"
#include "sources/record_source.hpp"

namespace posixtrace {

struct LaneControl;

// The stream's side of the lanes (emit/lanes.hpp; docs/architecture.md,
// "Lanes"): held by the one stream that takes the fast path. Each thread's
// lane is a ring of its own that joins the merge once it exists.
class LaneSource final : public RecordSource {
public:
    // The fast path for a stream of the calling process; nullptr if another
    // stream holds it or the control could not be mapped. The lanes hold at
    // most `budget_bytes` at once, besides a chunk a thread (what an idle
    // thread keeps), taken as they fill and handed back as the merge reads
    // them. `loop_kept_bytes` (POSIX_TRACE_LOOP: what the stream keeps; 0
    // otherwise): a lane with no room, or holding that much (and at most a
    // quarter of the budget), takes back its oldest chunk the merge has not
    // claimed, the records there counted overwritten (LocalRing::ChunkRules). `now_ns`:
    // CLOCK_MONOTONIC, read before the call; the lanes that exist are skipped (what they hold
    // belongs to an earlier stream) and join `merger` now.
    static std::unique_ptr<LaneSource> attach(size_t budget_bytes, uint32_t max_data_size,
                                              uint64_t loop_kept_bytes, RingMerger &merger,
                                              uint64_t now_ns);
    explicit LaneSource(LaneControl &control); // see attach()
    ~LaneSource() override;                    // the fast path is free again; the lanes stay
    LaneSource(const LaneSource &) = delete;
    LaneSource &operator=(const LaneSource &) = delete;

    void set_state(pt_stream_state state) override;
    void set_filter(const trace_event_set_t &filtered) override;
    // Lanes created since the previous call join `merger`.
    void join_merge(RingMerger &merger, uint64_t now_ns) override;
    // The eventfd a writer wakes the drain through while it dozes.
    std::vector<int> readable_fds() const override;
    void doze() override;
    // Every period: the lanes of threads that exited are given back, their
    // unfinished records discarded and counted lost (a thread can only
    // leave one so through a signal handler); a record a live thread left
    // busy for good is given up (RingMerger::pass_abandoned_records).
    RingMerger::GivenUp look_after(RingMerger &merger, uint64_t now_ns) override;
    // ring_full: events that found no room (a full lane; no lane: signal
    // handlers nested too deep, no memory for one); and those refused while
    // POSIX_TRACE_UNTIL_FULL had stopped the stream; overwritten: records a
    // lane took back to make room (loop_kept_bytes).
    SourceLosses losses() override;
    uint64_t refused_while_full() const override;

private:
    // Returns how many lanes live threads own.
    size_t reclaim_lanes_of_exited_threads();
    uint64_t lost() const;
    uint64_t overwritten() const;

    LaneControl &control_;
    Lane *adopted_head_ = nullptr; // the newest lane already in the merge
    uint64_t listed_after_ns_ = 0; // the clock read before the list was last read
    size_t budget_chunks_ = 0;     // what the stream allows the lanes, besides a chunk a thread
    uint64_t lost_before_ = 0, refused_before_ = 0, overwritten_before_ = 0;
    uint64_t reclaimed_ns_ = 0;      // when exited threads' lanes were last looked for
    size_t owned_ = 0;               // lanes live threads owned, at that look
    uint64_t stalls_checked_ns_ = 0; // when busy records were last looked at
};

} // namespace posixtrace
