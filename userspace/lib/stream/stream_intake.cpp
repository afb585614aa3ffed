#include "stream/stream_intake.hpp"

namespace posixtrace {

void StreamIntake::deliver(const pt_record &record, const uint8_t *data, ProcessProbes *probes)
{
    Delivery delivery;
    pipeline_.deliver(record, data, probes, delivery);
    switch (delivery.action) {
    case Delivery::Action::Skip:
        return;
    case Delivery::Action::Refuse:
        if (delivery.refused_events)
            note_loss(StreamLoss::Refused, delivery.refused_events);
        return;
    case Delivery::Action::Store:
        break;
    }
    store(*delivery.header, delivery.data);
    if (delivery.hidden_in_kernel)
        ledger_.count_kernel_loss(0, delivery.hidden_in_kernel, 0);
    if (delivery.resume_after)
        store(owner_.system_record(POSIX_TRACE_RESUME, record.timestamp_ns, 0), nullptr);
}

void StreamIntake::store(const pt_record &record, const void *data)
{
    size_t bytes = stored_event_size(record.data_len);
    switch (policy_.make_room(store_, record, bytes, phase_)) {
    case FullPolicy::Decision::Store:
        break;
    case FullPolicy::Decision::FlushThenStore:
        owner_.flush_to_log(record.timestamp_ns);
        break;
    case FullPolicy::Decision::StopThenRefuse:
        stop_full(record.timestamp_ns);
        refuse(record, data);
        return;
    case FullPolicy::Decision::Refuse:
        refuse(record, data);
        return;
    }
    count_overwritten();
    if (!store_.fits(bytes)) { // larger than the whole stream
        ledger_.count_stream_loss(StreamLoss::Refused, 1);
        return;
    }
    push(record, data);
}

void StreamIntake::drop_late(const pt_record &record, ProcessProbes *probes)
{
    if (uint64_t events = pipeline_.drop(record, probes))
        note_loss(StreamLoss::Late, events);
}

void StreamIntake::note_loss(StreamLoss kind, uint64_t count)
{
    ledger_.count_stream_loss(kind, count);
    ledger_.owe_report(count);
}

void StreamIntake::overwrite_before(uint64_t monotonic_ns)
{
    store_.overwrite_before(uint64_t(int64_t(monotonic_ns) + realtime_offset_ns_));
    count_overwritten();
}

void StreamIntake::count_overwritten()
{
    StreamStore::Overwritten overwritten = store_.take_overwritten();
    if (overwritten.records)
        ledger_.set_overrun();
    if (overwritten.events)
        ledger_.count_stream_loss(StreamLoss::Overwritten, overwritten.events);
}

// POSIX_TRACE_UNTIL_FULL refuses what comes while the stream is full; the
// store keeps what to report when it runs again.
void StreamIntake::refuse(const pt_record &record, const void *data)
{
    if (store_.refuse(record, data))
        ledger_.count_stream_loss(StreamLoss::Refused, 1);
}

// Every event the stream holds is counted recorded, the trace system's own
// (a stop, a flush start) too: what a log fails to write is taken back.
void StreamIntake::push(pt_record record, const void *data)
{
    record.timestamp_ns = uint64_t(int64_t(record.timestamp_ns) + realtime_offset_ns_);
    store_.push(record, data);
    ledger_.count_recorded();
}

// The stream's last event is the stop event, stamped with the first event
// that did not fit, in the room the store kept for it.
void StreamIntake::stop_full(uint64_t timestamp_ns)
{
    owner_.stop_recording_while_full();
    store_.set_full(true);
    ledger_.set_overrun();
    posix_trace_stop_data cause{POSIX_TRACE_STOP_STREAM_FULL};
    if (!filters_.filters(POSIX_TRACE_STOP))
        push(owner_.system_record(POSIX_TRACE_STOP, timestamp_ns, sizeof cause), &cause);
}

} // namespace posixtrace
