#include "stream/stream_controls.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "events/event_set.hpp"
#include "util/clock.hpp"

namespace posixtrace {

void StreamControls::set_kernel_state(pt_stream_state state)
{
    parts_.recording.set_state(state);
    if (parts_.drain)
        parts_.drain->note_recording_state(state, monotonic_now());
}

// The drain thread sleeps without a timeout while the stream is suspended:
// it must be woken to go back to its periodic drain.
void StreamControls::resume_running()
{
    phase_ = StreamPhase::Running;
    set_kernel_state(PT_STREAM_RUNNING);
    parts_.recording.wake();
}

void StreamControls::flush(std::unique_lock<TrackedMutex> &lock, uint64_t until_ns)
{
    parts_.drain->flush(lock, until_ns, [this] { return shut_down(); });
}

void StreamControls::start()
{
    if (running() || parts_.store->full())
        return; // POSIX: no event, no change
    uint64_t now = monotonic_now();
    if (LossReport refused = parts_.store->take_refused(); refused.any())
        parts_.drain->queue_loss(refused, now);
    parts_.drain->queue_system_event(POSIX_TRACE_START, now, nullptr, 0);
    parts_.drain->note_started(now);
    resume_running();
}

void StreamControls::stop(std::unique_lock<TrackedMutex> &lock)
{
    // An explicit stop wins over a restart: automatic, or at clear.
    if (phase_ == StreamPhase::StoppedFull)
        cancel_auto_restart();
    if (phase_ != StreamPhase::Running) {
        phase_ = StreamPhase::Suspended;
        return;
    }
    // Suspended first, then stamped: a record the kernel stamps after the
    // change is discarded there, so every recorded event precedes this one.
    set_kernel_state(PT_STREAM_SUSPENDED);
    phase_ = StreamPhase::Suspended;
    uint64_t now = monotonic_now();
    posix_trace_stop_data cause{POSIX_TRACE_STOP_BY_CALL};
    parts_.drain->queue_system_event(POSIX_TRACE_STOP, now, &cause, sizeof cause);
    flush(lock, now);
}

// What was recorded until now is gone, and so are the losses counted until
// now; a record stamped earlier that is still being written is dropped when
// it comes. The cut-off is read last: nothing recorded after it is
// discarded.
void StreamControls::clear()
{
    SourceLosses counted = parts_.recording.losses();
    uint64_t misses = parts_.recording.kernel().recursion_misses_total();
    parts_.drain->discard_recorded();
    uint64_t now = monotonic_now();
    parts_.pipeline->cut_offs().clear_before(now);
    parts_.pipeline->hidden_wakeups().distrust_until(now);
    parts_.pipeline->hidden_wakeups().forget_all();
    parts_.system_events->clear();
    parts_.store->clear();
    parts_.ledger.clear(counted, misses, now);
    if (parts_.log)
        parts_.log->clear();
    if (phase_ == StreamPhase::StoppedFull || phase_ == StreamPhase::StoppedLogFull)
        resume_running();
}

void StreamControls::shut_down_now()
{
    if (parts_.recording.has_kernel())
        set_kernel_state(PT_STREAM_SUSPENDED);
    phase_ = StreamPhase::ShutDown;
}

void StreamControls::after_read()
{
    if (parts_.store->empty() && phase_ == StreamPhase::StoppedFull)
        auto_restart();
    else
        parts_.full_policy->after_read(*parts_.store);
}

int StreamControls::flush_log(std::unique_lock<TrackedMutex> &lock)
{
    if (int err = parts_.log->first_error())
        return err;
    uint64_t now = monotonic_now();
    flush(lock, now); // what the kernel recorded until now is in the stream
    if (shut_down())
        return EINVAL;
    // Its start after what it took (events stamped after `now` perhaps).
    if (!parts_.log->flush(std::max<uint64_t>(now, parts_.recording.merger().last_delivered_ns())))
        return parts_.log->first_error(); // the log failed meanwhile: no flush started
    after_flush_to_log();
    return 0;
}

// A log left by an exec has no trailer: a reader takes it as a log whose
// writer stopped after its last block, and reads every event.
void StreamControls::flush_log_before_exec(std::unique_lock<TrackedMutex> &lock)
{
    if (parts_.log->first_error())
        return;
    flush(lock, monotonic_now());
    if (shut_down())
        return;
    parts_.log->move_all();
    wait_for_log_writes(lock);
}

// The lock is let go meanwhile (the writer does not take it, a shutdown
// may).
void StreamControls::wait_for_log_writes(std::unique_lock<TrackedMutex> &lock)
{
    while (!shut_down() && parts_.log->flushes_pending()) {
        lock.unlock();
        usleep(100);
        lock.lock();
    }
}

posix_trace_status_info StreamControls::status()
{
    posix_trace_status_info status{};
    status.posix_stream_status = running() ? POSIX_TRACE_RUNNING : POSIX_TRACE_SUSPENDED;
    // A caller holding the stream may ask after a shutdown freed the store.
    bool full = parts_.store && parts_.store->full();
    status.posix_stream_full_status = full ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    status.posix_stream_overrun_status =
        parts_.ledger.take_overrun() ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    status.posix_log_full_status = POSIX_TRACE_NOT_FULL;
    status.posix_log_overrun_status = POSIX_TRACE_NO_OVERRUN;
    status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    status.posix_stream_flush_error = 0;
    if (parts_.log)
        parts_.log->report_status(status);
    return status;
}

void StreamControls::after_flush_to_log()
{
    if (phase_ == StreamPhase::StoppedFull)
        auto_restart(); // an UNTIL_FULL stream emptied by the flush runs again
}

// POSIX_TRACE_UNTIL_FULL: once the reader has emptied a full stream it runs
// again, reporting first what it refused while full, then a start event.
// They go through the merge like every system event, so they come after
// anything queued before them.
void StreamControls::auto_restart()
{
    uint64_t now = monotonic_now();
    count_refused_recorded(now);
    parts_.store->set_full(false);
    if (LossReport refused = parts_.store->take_refused(); refused.any())
        parts_.drain->queue_loss(refused, now);
    parts_.drain->queue_system_event(POSIX_TRACE_START, now, nullptr, 0);
    parts_.pipeline->cut_offs().accept_after(now);
    resume_running();
}

// An UNTIL_FULL stream stopped by the user while it stopped itself stays
// suspended. What the kernel recorded before it saw the full state, or
// refused since, is lost: it is counted now and reported before the next
// start, and no stale record may reach the stream after it is read empty.
void StreamControls::cancel_auto_restart()
{
    set_kernel_state(PT_STREAM_SUSPENDED);
    uint64_t now = monotonic_now();
    count_refused_recorded(now);
    parts_.pipeline->cut_offs().accept_after(now);
    phase_ = StreamPhase::Suspended;
}

// What the kernel refused while the stream was full, and what it recorded
// before it saw the full state (stale once the stream is read empty): lost,
// held for the report the next start makes.
void StreamControls::count_refused_recorded(uint64_t now_ns)
{
    parts_.drain->account_refusals(now_ns, parts_.recording.refused_while_full());
    uint64_t lost = parts_.drain->discard_recorded();
    parts_.store->add_refused(lost);
    parts_.ledger.count_stream_loss(StreamLoss::Refused, lost);
}

int StreamControls::set_filter(const trace_event_set_t &set, int how)
{
    trace_event_set_t updated = parts_.filters.current();
    if (!change_event_set(updated, set, how))
        return EINVAL;
    posix_trace_filter_data change{parts_.filters.current(), updated};
    // A thread event the new filter lets through needs its program attached
    // first: if the kernel refuses, the old filter stays and the caller is
    // told.
    parts_.filters.set_current(updated);
    if (int err = parts_.select_thread_event_programs()) {
        parts_.filters.set_current(change.old_filter);
        parts_.select_thread_event_programs();
        return err;
    }
    // In two steps around the filter event's stamp: what the new filter
    // excludes stops before it, what it admits starts after it. So no event
    // on either side of it contradicts it.
    parts_.recording.set_filter(event_set_union(updated, change.old_filter));
    uint64_t now = monotonic_now();
    parts_.recording.set_filter(updated);
    parts_.filters.took_effect(change.old_filter, now);
    parts_.drain->distrust_sleeps();
    if (running())
        parts_.drain->queue_system_event(POSIX_TRACE_FILTER, now, &change, sizeof change);
    return 0;
}

// The log's last event is its stop event: the stream stops too, so the
// kernel records nothing the log would discard; posix_trace_clear or
// posix_trace_start runs it again.
void StreamControls::stop_for_full_log()
{
    if (phase_ != StreamPhase::Running)
        return;
    set_kernel_state(PT_STREAM_SUSPENDED);
    phase_ = StreamPhase::StoppedLogFull;
}

void StreamControls::stop_recording_while_full()
{
    set_kernel_state(PT_STREAM_FULL);
    phase_ = StreamPhase::StoppedFull;
}

void StreamControls::flush_to_log(uint64_t timestamp_ns)
{
    parts_.log->flush(timestamp_ns); // everything goes to the log
}

pt_record StreamControls::system_record(trace_event_id_t id, uint64_t timestamp_ns,
                                        size_t size) const
{
    return parts_.system_events->record(id, timestamp_ns, size);
}

} // namespace posixtrace
