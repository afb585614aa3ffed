// Stream: storing an event under the stream full policy (LOOP, UNTIL_FULL,
// FLUSH), and the automatic stop and restart that go with it.
#include "stream/stream.hpp"

#include <cstring>

#include "stream/stream_internal.hpp"

namespace posixtrace {
using namespace stream_detail;

// Applies the stream full policy to one event on its way into the store.
void Stream::store_locked(const pt_record &record, const void *data)
{
    size_t bytes = stored_event_size(record.data_len);
    switch (full_policy_->make_room(*store_, record, bytes, phase_)) {
    case FullPolicy::Decision::Store:
        break;
    case FullPolicy::Decision::FlushThenStore:
        log_->flush(record.timestamp_ns); // everything goes to the log
        break;
    case FullPolicy::Decision::StopThenRefuse:
        auto_stop_locked(record.timestamp_ns);
        refuse_locked(record, data);
        return;
    case FullPolicy::Decision::Refuse:
        refuse_locked(record, data);
        return;
    }
    StreamStore::Overwritten overwritten = store_->take_overwritten();
    if (overwritten.records)
        ledger_.set_overrun();
    if (overwritten.events)
        ledger_.count_stream_loss(StreamLoss::Overwritten, overwritten.events);
    if (!store_->fits(bytes)) { // larger than the whole stream
        ledger_.count_stream_loss(StreamLoss::Refused, 1);
        return;
    }
    push_locked(record, data);
}

// POSIX_TRACE_UNTIL_FULL refuses what comes while the stream is full; the
// store keeps what to report when it runs again.
void Stream::refuse_locked(const pt_record &record, const void *data)
{
    if (store_->refuse(record, data))
        ledger_.count_stream_loss(StreamLoss::Refused, 1);
}

// Every event the stream holds is counted recorded, the trace system's own
// (a stop, a flush start) too: what a log fails to write is taken back.
void Stream::push_locked(pt_record record, const void *data)
{
    record.timestamp_ns = uint64_t(int64_t(record.timestamp_ns) + realtime_offset_ns_);
    store_->push(record, data);
    ledger_.count_recorded();
}

void Stream::auto_stop_locked(uint64_t timestamp_ns)
{
    set_kernel_state_locked(PT_STREAM_FULL);
    phase_ = StreamPhase::StoppedFull;
    store_->set_full(true);
    ledger_.set_overrun();
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
    account_refusals_locked(now, refused_while_full_locked());
    uint64_t lost = discard_recorded_locked(); // recorded before the kernel saw the stop
    store_->add_refused(lost);
    ledger_.count_stream_loss(StreamLoss::Refused, lost);
    store_->set_full(false);
    if (LossReport refused = store_->take_refused(); refused.any())
        queue_loss_events_locked(refused, now);
    queue_system_event_locked(POSIX_TRACE_START, now, nullptr, 0);
    pipeline_->cut_offs().accept_after(now);
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
    account_refusals_locked(now, refused_while_full_locked());
    uint64_t lost = discard_recorded_locked();
    store_->add_refused(lost);
    ledger_.count_stream_loss(StreamLoss::Refused, lost);
    pipeline_->cut_offs().accept_after(now);
    phase_ = StreamPhase::Suspended;
}

} // namespace posixtrace
