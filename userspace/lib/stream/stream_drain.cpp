// Stream: the drain thread. It merges the rings and the system events, reports
// what the kernel lost, follows the traced processes, and delivers.
#include "stream/stream.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "stream/stream_internal.hpp"

namespace posixtrace {
using namespace stream_detail;

// ---- recording: drain thread ---------------------------------------------

void Stream::drain_loop(std::stop_token stop)
{
    while (!stop.stop_requested()) {
        std::optional<timespec> timeout;
        {
            std::lock_guard lock(mutex_);
            timeout = drain_timeout_locked();
        }
        recording_.wait(timeout);
        if (stop.stop_requested())
            break;

        std::lock_guard lock(mutex_);
        if (log_)
            log_->note_flushes_done();
        uint64_t ticket = flush_requested_;
        drain_pass_locked();
        // A flush is done once nothing stamped before its time can come.
        if (flush_completed_ < ticket && safe_ns_ > flush_until_ns_) {
            flush_completed_ = ticket;
            flushed_.notify_all();
        }
    }
}

// A flush waits until the merge's safe point passes its time: by the clock
// margin, or until a record still being written is committed.
std::optional<timespec> Stream::drain_timeout_locked()
{
    DrainSchedule::State state{merger().behind(), flush_completed_ < flush_requested_, running(),
                               !system_events_->empty() || merger().holding() ||
                                   rescan_->pending(kernel())};
    DrainSchedule::Sleep sleep = schedule_.next(state);
    if (sleep.starts_dozing)
        recording_.doze();
    if (!sleep.ns)
        return std::nullopt;
    return to_timespec(*sleep.ns);
}

void Stream::drain_pass_locked()
{
    uint64_t now = monotonic_now();
    recording_.look_after_sources(now, [this](const RingMerger::GivenUp &given_up) {
        if (auto window = loss_reports_->given_up(given_up, loss_placement_locked()))
            queue_loss_window_locked(*window);
    });
    pipeline_->refresh();
    if (probes())
        rescan_->look(now, kernel(), *probes());
    uint64_t counts_read_ns = monotonic_now();
    SourceLosses counted = recording_.losses(); // once a pass, for both
    LossReports::Pass pass{passes_,
                           flush_requested_,
                           last_pass_ns_,
                           suspended_ns_,
                           merger().taken_back_after_ns(),
                           loss_placement_locked()};
    for (const LossWindow &window : loss_reports_->look(
             counted, counts_read_ns, [this] { return kernel().recursion_misses_total(); }, pass))
        queue_loss_window_locked(window);
    account_refusals_locked(now, counted.refused_while_full);
    RingMerger::Sinks sinks{
        [this](const pt_record &record) { intake_->deliver(record, record.data, probes()); },
        [this](SystemEvent &&event) { intake_->store(event.header, event.data.data()); },
        [this](const pt_record &record) { intake_->drop_late(record, probes()); },
        log_ && log_->takes_runs() ? RingMerger::ChunkSink([this](const RingMerger::Chunk &chunk) {
            return log_->take_chunk(chunk);
        })
                                   : RingMerger::ChunkSink()};
    safe_ns_ = std::max(safe_ns_, merger().merge(now, system_events_->events(), sinks));
    // Claimed records older than what a lane took back went with it (LOOP):
    // reported with this pass's other losses, before anything younger.
    if (uint64_t older = merger().take_dropped_older())
        intake_->note_loss(StreamLoss::Overwritten, older);
    overwrite_before_taken_back_locked();
    filters_.forget_before(merger().last_delivered_ns());
    rescan_->delivered_before(safe_ns_);
    last_pass_ns_ = now;
    ++passes_;
    schedule_.pass_done(merger().found_new());
    if (uint64_t owed = ledger_.take_owed())
        queue_loss_events_locked({0, owed, 0}, merger().last_delivered_ns());
    update_readable_locked();
}

// Once the merge has seen a lane take records back, the stream's events
// older than them go too: LOOP overwrites the oldest first, and the report
// leads what is left. Done where the merge sees it, not where the lane's
// count is read: the two come in either order, and a count read first
// (when the drain is held back, all of a burst's) would leave the events
// the stream held from before the take-back in place, ahead of a gap.
void Stream::overwrite_before_taken_back_locked()
{
    if (!merger().took_back())
        return;
    intake_->overwrite_before(merger().taken_back_after_ns());
    merger().forget_taken_back();
}

// Without the latest start as a floor, a stream whose first pass after its
// start came once a burst had filled a ring reported the loss before its
// start event, at the last look taken while it was suspended.
LossPlacement Stream::loss_placement_locked() const
{
    return LossPlacement(RingMerger::kClockMarginNs, merger().last_delivered_ns(), started_ns_);
}

// What POSIX_TRACE_UNTIL_FULL refused in the kernel is taken as the kernel
// counts it, every pass and at each restart, so a refusal counted just after
// a restart is not missed. While the stream is full, refusals join the report
// its restart makes; otherwise they are reported like the kernel's losses, at
// the time of the previous reading (they happened after it).
void Stream::account_refusals_locked(uint64_t now_ns, uint64_t refused)
{
    auto fresh = loss_reports_->refusals(refused, now_ns, loss_placement_locked());
    if (!fresh)
        return;
    if (phase_ == StreamPhase::StoppedFull)
        store_->add_refused(fresh->events);
    else
        queue_loss_window_locked({{0, fresh->events, 0}, fresh->report_ns, monotonic_now()});
}

// Drops what the kernel recorded and the merge has not delivered; returns
// how many events that was.
uint64_t Stream::discard_recorded_locked()
{
    uint64_t events = 0;
    merger().discard_all(
        [&](const pt_record &record) { events += pipeline_->drop(record, probes()); });
    return events;
}

} // namespace posixtrace
