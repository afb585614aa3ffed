#include "store/loss_reports.hpp"

#include <algorithm>

#include "util/clock.hpp"

namespace posixtrace {

// What the kernel side could not record is reported where it happened
// (LossPlacement): after the previous reading of the counts, or where its
// run began if the kernel noted that (LossNotices). Either way before every
// event stamped after the loss, whatever CPU recorded it. The loss was
// counted by now: the resume event, stamped now (or when the stream stopped
// recording), closes the window in which every event it counts was lost.
std::vector<LossWindow> LossReports::look(const SourceLosses &counted, uint64_t read_ns,
                                          const std::function<uint64_t()> &misses_total,
                                          const Pass &pass)
{
    uint64_t looked_ns = counts_read_ns_;
    uint64_t previous_read_ns = counts_read_ns_;
    counts_read_ns_ = read_ns;
    uint64_t skipped = fresh_skipped_runs(misses_total, pass, looked_ns);
    SourceLosses fresh = ledger_.fresh_transport(counted);
    uint64_t ended_ns = clock_nanos(CLOCK_MONOTONIC); // after every count was read
    if (pass.suspended_ns)
        ended_ns = std::min(ended_ns, pass.suspended_ns);
    std::vector<LossWindow> windows;
    // A lane made room as the stream would have (LOOP): the records it took
    // back were reserved after its latest claim before (or are yet to be
    // seen by the merge, after the latest claim).
    if (fresh.overwritten) {
        ledger_.count_stream_loss(StreamLoss::Overwritten, fresh.overwritten);
        uint64_t at_ns = pass.placement.report_time(std::min(looked_ns, pass.taken_back_after_ns));
        windows.push_back({{0, fresh.overwritten, 0}, at_ns, at_ns});
    }
    uint64_t placed = 0;
    for (const PlacedLoss &loss : counted.placed)
        placed += loss.count;
    placed = std::min(placed, fresh.ring_full);
    uint64_t lost = fresh.ring_full - placed + fresh.unreported_switches + skipped;
    if (!lost && !placed)
        return windows;
    ledger_.count_kernel_loss(fresh.ring_full, fresh.unreported_switches, skipped);
    for (const LossWindow &window : pass.placement.kernel_windows(
             lost, counted.placed, placed, looked_ns, previous_read_ns, ended_ns))
        windows.push_back(window);
    return windows;
}

// What was skipped before a reading of the misses is reported before the
// events that follow it. It happened after the previous reading, which may
// be before `looked_ns`.
uint64_t LossReports::fresh_skipped_runs(const std::function<uint64_t()> &misses_total,
                                         const Pass &pass, uint64_t &looked_ns)
{
    if (pass.passes_before % kMissesPeriodPasses != 0 && misses_flush_ticket_ == pass.flush_ticket)
        return 0;
    misses_flush_ticket_ = pass.flush_ticket;
    uint64_t skipped = ledger_.fresh_misses(misses_total());
    if (skipped)
        looked_ns = std::min(looked_ns, misses_read_ns_);
    misses_read_ns_ = pass.previous_began_ns;
    return skipped;
}

std::optional<LossWindow> LossReports::given_up(const RingMerger::GivenUp &records,
                                                const LossPlacement &placement)
{
    if (!records.records)
        return std::nullopt;
    ledger_.count_kernel_loss(records.records, 0, 0);
    uint64_t at_ns = placement.report_time(records.reserved_by_ns);
    return LossWindow{{records.records, 0, 0}, at_ns, at_ns};
}

// Refusals happened after the previous reading of their count: reported
// there, like the kernel's losses.
std::optional<LossReports::Refused> LossReports::refusals(uint64_t refused_total, uint64_t now_ns,
                                                          const LossPlacement &placement)
{
    uint64_t since_ns = 0;
    uint64_t fresh = ledger_.fresh_refusals(refused_total, now_ns, since_ns);
    if (!fresh)
        return std::nullopt;
    ledger_.count_stream_loss(StreamLoss::Refused, fresh);
    return Refused{fresh, placement.report_time(since_ns)};
}

} // namespace posixtrace
