#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sources/record_source.hpp"
#include "store/loss_ledger.hpp"
#include "store/loss_placement.hpp"
#include "stream/ring_merger.hpp"

namespace posixtrace {

// What the drain finds lost, pass by pass: the part of each count the
// ledger has not seen, counted there once, and the windows the stream
// reports it in (LossPlacement). It remembers when it last read each count,
// since a loss it finds happened after that read; the stream tells it where
// the merge and the recording stand.
class LossReports {
public:
    // Reading the programs' skipped runs is a system call per program: done
    // every this many passes, and once for each flush (a stop is one).
    static constexpr uint64_t kMissesPeriodPasses = 8;

    // Where the stream stands at a pass. CLOCK_MONOTONIC.
    struct Pass {
        uint64_t passes_before = 0;       // drain passes before this one
        uint64_t flush_ticket = 0;        // the latest flush asked for
        uint64_t previous_began_ns = 0;   // when the pass before began
        uint64_t suspended_ns = 0;        // when recording stopped; 0 while it records
        uint64_t taken_back_after_ns = 0; // RingMerger::taken_back_after_ns()
        LossPlacement placement;
    };

    // `first_read_ns`: before the sources' rings existed.
    LossReports(LossLedger &ledger, uint64_t first_read_ns)
        : ledger_(ledger), counts_read_ns_(first_read_ns)
    {
    }

    // The transport's losses since the previous look, and the runs the
    // programs skipped (read through `misses_total` when due): counted,
    // and returned as the windows to report them in. `counted`: the
    // sources' totals, read just after `read_ns`.
    std::vector<LossWindow> look(const SourceLosses &counted, uint64_t read_ns,
                                 const std::function<uint64_t()> &misses_total, const Pass &pass);
    // Lane records given up (RingMerger::pass_abandoned_records): counted
    // as a full ring's loss, reported where the first was reserved, before
    // the events their writer made since.
    std::optional<LossWindow> given_up(const RingMerger::GivenUp &records,
                                       const LossPlacement &placement);
    // UNTIL_FULL's refusals in the sources since the previous reading,
    // counted; where to report them, unless the stream holds them for its
    // restart's report. nullopt if none.
    struct Refused {
        uint64_t events = 0;
        uint64_t report_ns = 0;
    };
    std::optional<Refused> refusals(uint64_t refused_total, uint64_t now_ns,
                                    const LossPlacement &placement);

private:
    uint64_t fresh_skipped_runs(const std::function<uint64_t()> &misses_total, const Pass &pass,
                                uint64_t &looked_ns);

    LossLedger &ledger_;
    uint64_t counts_read_ns_;          // the sources' counts were last read just after it
    uint64_t misses_read_ns_ = 0;      // before the skipped runs were last read
    uint64_t misses_flush_ticket_ = 0; // the flush they were last read for
};

} // namespace posixtrace
