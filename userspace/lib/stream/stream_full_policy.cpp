// Stream: the automatic restart of a stream POSIX_TRACE_UNTIL_FULL stopped,
// and what the stream carries out for its intake's full policies.
#include "stream/stream.hpp"

#include "util/clock.hpp"

namespace posixtrace {

// POSIX_TRACE_UNTIL_FULL: once the reader has emptied a full stream it runs
// again, reporting first what it refused while full, then a start event.
// They go through the merge like every system event, so they come after
// anything queued before them.
void Stream::auto_restart_locked()
{
    uint64_t now = monotonic_now();
    count_refused_recorded_locked(now);
    parts_.store->set_full(false);
    if (LossReport refused = parts_.store->take_refused(); refused.any())
        parts_.drain->queue_loss(refused, now);
    parts_.drain->queue_system_event(POSIX_TRACE_START, now, nullptr, 0);
    parts_.pipeline->cut_offs().accept_after(now);
    resume_running_locked();
}

// An UNTIL_FULL stream stopped by the user while it stopped itself stays
// suspended. What the kernel recorded before it saw the full state, or
// refused since, is lost: it is counted now and reported before the next
// start, and no stale record may reach the stream after it is read empty.
void Stream::cancel_auto_restart_locked()
{
    set_kernel_state_locked(PT_STREAM_SUSPENDED);
    uint64_t now = monotonic_now();
    count_refused_recorded_locked(now);
    parts_.pipeline->cut_offs().accept_after(now);
    phase_ = StreamPhase::Suspended;
}

// What the kernel refused while the stream was full, and what it recorded
// before it saw the full state (stale once the stream is read empty): lost,
// held for the report the next start makes.
void Stream::count_refused_recorded_locked(uint64_t now_ns)
{
    parts_.drain->account_refusals(now_ns, parts_.recording.refused_while_full());
    uint64_t lost = parts_.drain->discard_recorded();
    parts_.store->add_refused(lost);
    parts_.ledger.count_stream_loss(StreamLoss::Refused, lost);
}

// StreamIntake::Owner, under the lock.
void Stream::stop_recording_while_full()
{
    set_kernel_state_locked(PT_STREAM_FULL);
    phase_ = StreamPhase::StoppedFull;
}

void Stream::flush_to_log(uint64_t timestamp_ns)
{
    parts_.log->flush(timestamp_ns); // everything goes to the log
}

} // namespace posixtrace
