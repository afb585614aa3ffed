// Stream: the trace log it flushes to.
#include "stream/stream.hpp"

#include <unistd.h>

#include <posix_trace/events.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "stream/stream_internal.hpp"

namespace posixtrace {
using namespace stream_detail;

// ---- the trace log -------------------------------------------------------------

int Stream::flush()
{
    std::unique_lock lock(mutex_);
    if (shut_down() || !log_)
        return EINVAL;
    if (int err = log_->first_error())
        return err;
    uint64_t now = monotonic_now();
    flush_locked(lock, now); // what the kernel recorded until now is in the stream
    if (shut_down())
        return EINVAL;
    // Its start after what it took (events stamped after `now` perhaps).
    if (!log_->flush(std::max<uint64_t>(now, merger().last_delivered_ns()))) {
        update_readable_locked(); // the log failed meanwhile: no flush started
        return log_->first_error();
    }
    if (phase_ == StreamPhase::StoppedFull)
        auto_restart_locked(); // an UNTIL_FULL stream emptied by the flush runs again
    update_readable_locked();
    return 0;
}

// A log left by an exec has no trailer: a reader takes it as a log whose
// writer stopped after its last block, and reads every event.
void Stream::flush_log_before_exec()
{
    std::unique_lock lock(mutex_);
    if (shut_down() || !log_ || log_->first_error())
        return;
    flush_locked(lock, monotonic_now());
    if (shut_down())
        return;
    log_->move_all();
    wait_for_flushes_locked(lock);
}

// Until the log writer has written every block handed to it; the lock is let
// go meanwhile (the writer does not take it, a shutdown may).
void Stream::wait_for_flushes_locked(std::unique_lock<TrackedMutex> &lock)
{
    while (!shut_down() && log_->flushes_pending()) {
        lock.unlock();
        usleep(100);
        lock.lock();
    }
}

// The stream's side of LogHandOff::Owner.
bool Stream::take_loss_report(pt_record &record, posix_trace_overflow_data &loss)
{
    return take_loss_report_locked(record, loss);
}

std::optional<std::string> Stream::name_for_log(uint32_t id) const
{
    return event_types_->name_of(id);
}

void Stream::queue_system_event(trace_event_id_t id, uint64_t monotonic_ns, const void *data,
                                size_t size)
{
    queue_system_event_locked(id, monotonic_ns, data, size);
}

// Every event the stream hands over later is stamped no earlier than what
// was delivered, nor than the merge's safe point: a record is delivered
// past it, a run was not read when it passed, a system event is queued
// there at the earliest.
uint64_t Stream::handed_over_before_ns() const
{
    return uint64_t(int64_t(std::max(merger().last_delivered_ns(), safe_ns_)) +
                    realtime_offset_ns_);
}

uint64_t Stream::delivered_ns() const
{
    return merger().last_delivered_ns();
}

// The log's last event is its stop event: the stream stops too, so the
// kernel records nothing the log would discard; posix_trace_clear or
// posix_trace_start runs it again.
void Stream::stop_for_full_log()
{
    if (phase_ != StreamPhase::Running)
        return;
    set_kernel_state_locked(PT_STREAM_SUSPENDED);
    phase_ = StreamPhase::StoppedLogFull;
}

log::FinalState Stream::final_state_locked()
{
    log::FinalState state{};
    state.status.posix_stream_status = POSIX_TRACE_SUSPENDED;
    state.status.posix_stream_full_status =
        store_->full() ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    state.status.posix_stream_overrun_status =
        ledger_.overrun() ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    state.status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    state.status.posix_stream_flush_error = log_->first_error(); // the log's own status: close()
    state.recorded = ledger_.counters().recorded;
    state.lost_in_kernel = ledger_.counters().lost_in_kernel;
    state.lost_in_stream = ledger_.counters().lost_in_stream;
    state.types = event_types_->named();
    return state;
}

} // namespace posixtrace
