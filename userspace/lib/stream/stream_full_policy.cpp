// Stream: storing an event under the stream full policy (LOOP, UNTIL_FULL,
// FLUSH), and the automatic stop and restart that go with it.
#include "stream/stream.hpp"

#include <cstring>

#include "stream/stream_internal.hpp"

namespace posixtrace {
using namespace stream_detail;

// Applies the stream full policy to one event on its way into the buffer.
void Stream::store_locked(const pt_record &record, const void *data)
{
    size_t bytes = stored_event_size(record.data_len);
    if (attributes_.stream_full_policy == POSIX_TRACE_FLUSH) {
        if (!buffer_->fits(bytes) && move_to_log_locked()) // full: everything goes to the log
            note_flush_start_locked(record.timestamp_ns);
    } else if (attributes_.stream_full_policy == POSIX_TRACE_LOOP) {
        while (!buffer_->fits(bytes) && !buffer_->empty())
            drop_oldest_locked();
    } else {
        if (auto_stopped_) {
            refuse_locked(record, data);
            return;
        }
        // A stop event may take the room kept for the stop event.
        bool stop_event = record.event_id == POSIX_TRACE_STOP && record.cpu == UINT16_MAX;
        size_t room_kept = stop_event ? 0 : kStopEventBytes + kLossEventsBytes;
        if (!buffer_->fits(bytes + room_kept)) {
            auto_stop_locked(record.timestamp_ns);
            refuse_locked(record, data);
            return;
        }
    }
    if (!buffer_->fits(bytes)) { // larger than the whole stream
        count_stream_loss_locked(StreamLoss::Refused, 1);
        return;
    }
    push_locked(record, data);
}

// POSIX_TRACE_UNTIL_FULL refuses what comes while the stream is full. A
// refused loss report hands its counts on; a resume marker is no event.
// (Overflow and resume events are only ever the trace system's own: the
// kernel records no system event id for posix_trace_event().)
void Stream::refuse_locked(const pt_record &record, const void *data)
{
    if (record.event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data carried;
        std::memcpy(&carried, data, sizeof carried);
        lost_while_full_.in_kernel += carried.lost_in_kernel;
        lost_while_full_.in_stream += carried.lost_in_stream;
        return;
    }
    if (record.event_id == POSIX_TRACE_RESUME)
        return;
    ++lost_while_full_.in_stream;
    count_stream_loss_locked(StreamLoss::Refused, 1);
}

// Every event the stream holds is counted recorded, the trace system's own
// (a stop, a flush start) too: what a log fails to write is taken back.
void Stream::push_locked(pt_record record, const void *data)
{
    record.timestamp_ns = uint64_t(int64_t(record.timestamp_ns) + realtime_offset_ns_);
    buffer_->push(record, data);
    ++counters_.recorded;
}

// POSIX_TRACE_LOOP: the oldest event makes room. Its loss is reported to the
// reader before the oldest surviving event; a dropped overflow event hands
// its counts on so no loss goes unreported.
void Stream::drop_oldest_locked()
{
    const pt_record &oldest = buffer_->front();
    if (oldest.event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data carried;
        std::memcpy(&carried, oldest.data, sizeof carried);
        head_loss_.in_kernel += carried.lost_in_kernel;
        head_loss_.in_stream += carried.lost_in_stream;
    } else if (oldest.event_id != POSIX_TRACE_RESUME) {
        ++head_loss_.in_stream;
        count_stream_loss_locked(StreamLoss::Overwritten, 1);
    }
    head_loss_.timestamp_ns = oldest.timestamp_ns;
    last_dropped_ns_ = oldest.timestamp_ns;
    resume_due_ = true;
    full_ = true;
    overrun_ = true;
    buffer_->pop();
}

void Stream::auto_stop_locked(uint64_t timestamp_ns)
{
    set_kernel_state_locked(PT_STREAM_FULL);
    running_ = false;
    auto_stopped_ = true;
    full_ = true;
    overrun_ = true;
    posix_trace_stop_data cause{POSIX_TRACE_STOP_STREAM_FULL};
    if (!filtered_locked(POSIX_TRACE_STOP))
        push_locked(system_record(POSIX_TRACE_STOP, timestamp_ns, sizeof cause), &cause);
}

// POSIX_TRACE_UNTIL_FULL: once the reader has emptied a full stream it runs
// again, reporting first what it refused while full, then a start event.
// They go through the merge like every system event, so they come after
// anything queued before them.
void Stream::auto_restart_locked()
{
    uint64_t now = monotonic_now();
    account_refusals_locked(now);
    uint64_t lost = discard_recorded_locked(); // recorded before the kernel saw the stop
    lost_while_full_.in_stream += lost;
    count_stream_loss_locked(StreamLoss::Refused, lost);
    auto_stopped_ = false;
    full_ = false;
    if (lost_while_full_.any()) {
        queue_loss_events_locked(lost_while_full_, now);
        lost_while_full_ = {};
    }
    queue_system_event_locked(POSIX_TRACE_START, now, nullptr, 0);
    accept_after_ns_ = now;
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
    account_refusals_locked(now);
    uint64_t lost = discard_recorded_locked();
    lost_while_full_.in_stream += lost;
    count_stream_loss_locked(StreamLoss::Refused, lost);
    accept_after_ns_ = now;
    auto_stopped_ = false;
}

} // namespace posixtrace
