#include "stream/stream_drain.hpp"

#include <algorithm>

#include "stream/log_hand_off.hpp"
#include "util/clock.hpp"

namespace posixtrace {

// A flush waits until the merge's safe point passes its time: by the clock
// margin, or until a record still being written is committed.
std::optional<timespec> StreamDrain::timeout()
{
    DrainSchedule::State state{merger().behind(), flush_waiting(),
                               parts_.phase == StreamPhase::Running,
                               !parts_.system_events.empty() || merger().holding() ||
                                   parts_.rescan.pending(parts_.recording.kernel())};
    DrainSchedule::Sleep sleep = schedule_.next(state);
    if (sleep.starts_dozing)
        parts_.recording.doze();
    if (!sleep.ns)
        return std::nullopt;
    return to_timespec(*sleep.ns);
}

void StreamDrain::pass()
{
    uint64_t ticket = flush_requested_;
    // A flush completes in the pass after the merge passed its time: the
    // counts this pass reads then include what the merge itself counted
    // (records a loop ring's programs overwrote, found as it copies them).
    bool merged_past_flush = safe_ns_ > flush_until_ns_;
    uint64_t now = monotonic_now();
    parts_.recording.look_after_sources(now, [this](const RingMerger::GivenUp &given_up) {
        if (auto window = loss_reports_.given_up(given_up, loss_placement()))
            queue_loss_window(*window);
    });
    parts_.pipeline.refresh();
    if (ProbeAttacher *attacher = parts_.recording.probes())
        parts_.rescan.look(now, parts_.recording.kernel(), *attacher);
    read_losses(now);
    merge(now);
    last_pass_ns_ = now;
    ++passes_;
    schedule_.pass_done(merger().found_new(), monotonic_now() - now);
    if (uint64_t owed = parts_.ledger.take_owed())
        queue_loss({0, owed, 0}, merger().last_delivered_ns());
    // A flush is done once nothing stamped before its time can come.
    if (flush_completed_ < ticket && merged_past_flush && safe_ns_ > flush_until_ns_) {
        flush_completed_ = ticket;
        flushed_.notify_all();
    }
}

// The sources' counts are read once a pass, for both the losses and the
// refusals.
void StreamDrain::read_losses(uint64_t now_ns)
{
    uint64_t counts_read_ns = monotonic_now();
    SourceLosses counted = parts_.recording.losses();
    LossReports::Pass pass{passes_,
                           flush_requested_,
                           last_pass_ns_,
                           suspended_ns_,
                           merger().taken_back_after_ns(),
                           loss_placement()};
    KernelProgram &kernel = parts_.recording.kernel();
    for (const LossWindow &window : loss_reports_.look(
             counted, counts_read_ns, [&kernel] { return kernel.recursion_misses_total(); }, pass))
        queue_loss_window(window);
    account_refusals(now_ns, counted.refused_while_full);
}

void StreamDrain::merge(uint64_t now_ns)
{
    StreamIntake &intake = parts_.intake;
    RingMerger::Sinks sinks{
        [this, &intake](const pt_record &record) { intake.deliver(record, record.data, probes()); },
        [&intake](SystemEvent &&event) { intake.store(event.header, event.data.data()); },
        [this, &intake](const pt_record &record) { intake.drop_late(record, probes()); }};
    if (parts_.log && parts_.log->takes_runs()) {
        sinks.chunk = [log = parts_.log](const RingMerger::Chunk &chunk) {
            return log->take_chunk(chunk);
        };
        sinks.unfinished_waits_after_ns = unfinished_chunks_wait_after(now_ns);
    } else if (intake.lends_chunks()) {
        sinks.chunk = [&intake](const RingMerger::Chunk &chunk) {
            return intake.lend_chunk(chunk);
        };
        sinks.unfinished_waits_after_ns = unfinished_chunks_wait_after(now_ns);
    }
    parts_.store.note_pass(now_ns);
    safe_ns_ = std::max(safe_ns_, merger().merge(now_ns, parts_.system_events.events(), sinks));
    parts_.store.settle_before(safe_ns_);
    // Claimed records older than what a lane took back went with it (LOOP):
    // reported with this pass's other losses, before anything younger.
    if (uint64_t older = merger().take_dropped_older())
        intake.note_loss(StreamLoss::Overwritten, older);
    if (uint64_t damaged = merger().take_damaged())
        intake.note_loss(StreamLoss::Refused, damaged);
    overwrite_before_taken_back();
    parts_.filters.forget_before(merger().last_delivered_ns());
    parts_.rescan.delivered_before(safe_ns_);
}

// A drain that keeps up with a thread would read the chunk it writes a
// record at a time, through every stage and into the store, at several
// times the cost of taking the chunk whole (into a run, or kept in place)
// once it is written.
// So a chunk begun recently waits; one a flush waits for does not, and the
// flush's safe point is never held past its time.
uint64_t StreamDrain::unfinished_chunks_wait_after(uint64_t now_ns) const
{
    uint64_t begun_after_ns = now_ns > kUnfinishedChunkWaitNs ? now_ns - kUnfinishedChunkWaitNs : 0;
    return std::max(begun_after_ns, flush_until_ns_ + RingMerger::kClockMarginNs);
}

// Once the merge has seen a lane take records back, the stream's events
// older than them go too: LOOP overwrites the oldest first, and the report
// leads what is left. Done where the merge sees it, not where the lane's
// count is read: the two come in either order, and a count read first
// (when the drain is held back, all of a burst's) would leave the events
// the stream held from before the take-back in place, ahead of a gap.
void StreamDrain::overwrite_before_taken_back()
{
    if (!merger().took_back())
        return;
    parts_.intake.overwrite_before(merger().taken_back_after_ns());
    merger().forget_taken_back();
}

// Without the latest start as a floor, a stream whose first pass after its
// start came once a burst had filled a ring reported the loss before its
// start event, at the last look taken while it was suspended.
LossPlacement StreamDrain::loss_placement()
{
    return LossPlacement(RingMerger::kClockMarginNs, merger().last_delivered_ns(), started_ns_);
}

void StreamDrain::flush(std::unique_lock<TrackedMutex> &lock, uint64_t until_ns,
                        const std::function<bool()> &abandoned)
{
    flush_until_ns_ = std::max(flush_until_ns_, until_ns);
    uint64_t ticket = ++flush_requested_;
    parts_.recording.wake();
    flushed_.wait(lock, [&] { return flush_completed_ >= ticket || abandoned(); });
}

// Never before the merge's safe point: what was stamped before it is
// delivered already.
void StreamDrain::queue_system_event(trace_event_id_t id, uint64_t timestamp_ns, const void *data,
                                     size_t size)
{
    parts_.system_events.queue(id, timestamp_ns, safe_ns_, data, size);
}

void StreamDrain::queue_loss(const LossReport &loss, uint64_t timestamp_ns)
{
    queue_loss_window({loss, timestamp_ns, timestamp_ns});
}

void StreamDrain::queue_loss_window(const LossWindow &window)
{
    distrust_sleeps(); // the lost events may include wakeups
    parts_.system_events.queue_loss(window, safe_ns_);
}

// What POSIX_TRACE_UNTIL_FULL refused in the kernel is taken as the kernel
// counts it, every pass and at each restart, so a refusal counted just after
// a restart is not missed. While the stream is full, refusals join the report
// its restart makes; otherwise they are reported like the kernel's losses, at
// the time of the previous reading (they happened after it).
void StreamDrain::account_refusals(uint64_t now_ns, uint64_t refused)
{
    auto fresh = loss_reports_.refusals(refused, now_ns, loss_placement());
    if (!fresh)
        return;
    if (parts_.phase == StreamPhase::StoppedFull)
        parts_.store.add_refused(fresh->events);
    else
        queue_loss_window({{0, fresh->events, 0}, fresh->report_ns, monotonic_now()});
}

uint64_t StreamDrain::discard_recorded()
{
    uint64_t events = 0;
    merger().discard_all(
        [&](const pt_record &record) { events += parts_.pipeline.drop(record, probes()); });
    return events + merger().take_damaged();
}

void StreamDrain::note_recording_state(pt_stream_state state, uint64_t monotonic_ns)
{
    distrust_sleeps();
    if (state != PT_STREAM_SUSPENDED)
        suspended_ns_ = 0;
    else if (!suspended_ns_)
        suspended_ns_ = monotonic_ns;
}

void StreamDrain::distrust_sleeps()
{
    parts_.pipeline.hidden_wakeups().distrust_until(monotonic_now());
}

} // namespace posixtrace
