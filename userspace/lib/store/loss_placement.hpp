#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sources/record_source.hpp"
#include "store/stream_store.hpp"

namespace posixtrace {

// A report of lost events: the overflow event where they may have begun,
// the resume event once they are known to have ended. Every event it
// counts was lost between the two. CLOCK_MONOTONIC.
struct LossWindow {
    LossReport loss;
    uint64_t from_ns = 0;
    uint64_t to_ns = 0;
};

// Where the stream reports what it lost, given when it looked. A loss that
// a look at the counts finds was not counted at the look before, so it
// happened after that one: its report goes there, less the clock margin
// (CPUs' clocks differ by less), and never before what the merge delivered
// nor before the latest start (the kernel records nothing while suspended,
// and the stop before the start read every loss counted until then).
class LossPlacement {
public:
    // Runs of a kernel ring's losses get their own reports, at most this
    // many a look (a ring that fills and empties again and again makes a
    // run each time); beyond that, neighbours in time share one.
    static constexpr size_t kMostPlacedReports = 16;

    LossPlacement(uint64_t clock_margin_ns, uint64_t delivered_ns, uint64_t started_ns)
        : margin_ns_(clock_margin_ns), delivered_ns_(delivered_ns), started_ns_(started_ns)
    {
    }

    // Where to stamp the report of a loss counted after a look at `looked_ns`.
    uint64_t report_time(uint64_t looked_ns) const;

    // The kernel side's losses of one look: `unplaced` events known only to
    // come after `looked_ns`; ring-full runs placed where they began
    // (`placed`, of which at most `placed_total` events are fresh), never
    // before the previous look at the counts (`counts_read_ns`). Each
    // window ends at `ended_ns`, when they were counted.
    std::vector<LossWindow> kernel_windows(uint64_t unplaced, const std::vector<PlacedLoss> &placed,
                                           uint64_t placed_total, uint64_t looked_ns,
                                           uint64_t counts_read_ns, uint64_t ended_ns) const;

private:
    uint64_t margin_ns_;
    uint64_t delivered_ns_;
    uint64_t started_ns_;
};

} // namespace posixtrace
