#pragma once
#include <sys/types.h>
#include <trace.h>

#include <cstddef>
#include <cstdint>
#include <deque>

#include "posixtrace.h"
#include "stages/filter_history.hpp"
#include "store/loss_placement.hpp"
#include "stream/ring_merger.hpp"

namespace posixtrace {

// The events the trace system makes itself (start, stop, filter, flush,
// loss reports), held in timestamp order until the merge reaches them and
// delivers them among the recorded ones. A type the stream's filter
// excludes is never queued.
class SystemEventQueue {
public:
    SystemEventQueue(pid_t target, const FilterHistory &filters)
        : target_(target), filters_(filters)
    {
    }

    // The record of a system event: the stream's target is its process.
    pt_record record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const;
    // Stamped no earlier than `floor_ns` (CLOCK_MONOTONIC), what the merge
    // has passed: everything stamped before it is in the stream already.
    void queue(trace_event_id_t id, uint64_t timestamp_ns, uint64_t floor_ns, const void *data,
               size_t size);
    // The overflow event where the losses may have begun, the resume event
    // once they are known to have ended: every event lost lay between them.
    void queue_loss(const LossWindow &window, uint64_t floor_ns);
    // A recorded event the stream held apart (LaneRuns::give_back), stamped
    // no earlier than `floor_ns`: delivered by the merge in its place.
    void queue_record(const pt_record &record, const uint8_t *data, uint64_t floor_ns);

    // What the merge takes from (sorted by timestamp).
    std::deque<SystemEvent> &events() { return events_; }
    bool empty() const { return events_.empty(); }
    void clear() { events_.clear(); }

private:
    pid_t target_;
    const FilterHistory &filters_;
    std::deque<SystemEvent> events_;
};

} // namespace posixtrace
