#include "stream/store_reader.hpp"

#include <sys/eventfd.h>

#include "util/event_fd.hpp"

namespace posixtrace {

StoreReader::StoreReader(StreamStore &store, LossLedger &ledger, const FilterHistory &filters,
                         const SystemEventQueue &system_events)
    : store_(store), ledger_(ledger), filters_(filters), system_events_(system_events),
      readable_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))
{
}

bool StoreReader::take_loss_report(pt_record &record, posix_trace_overflow_data &loss)
{
    if (!store_.report_due()) // the usual case, checked inline for every event read
        return false;
    if (std::optional<LossReport> overwritten = store_.take_overwritten_report()) {
        loss = {overwritten->in_kernel + overwritten->in_stream, overwritten->in_kernel,
                overwritten->in_stream};
        record =
            system_events_.record(POSIX_TRACE_OVERFLOW, overwritten->timestamp_ns, sizeof loss);
        if (!filters_.filters(POSIX_TRACE_OVERFLOW)) {
            ledger_.count_recorded();
            return true;
        }
    }
    if (std::optional<uint64_t> at = store_.take_resume_stamp()) {
        record = system_events_.record(POSIX_TRACE_RESUME, *at, 0);
        if (!filters_.filters(POSIX_TRACE_RESUME)) {
            ledger_.count_recorded();
            return true;
        }
    }
    return false;
}

StoreReader::Read StoreReader::read(const EventDestination &to)
{
    pt_record report;
    posix_trace_overflow_data loss;
    if (take_loss_report(report, loss)) {
        copy_event_out(report, report.timestamp_ns, &loss, to); // a resume event's data_len is 0
        return Read::Report;
    }
    const StoredEvent *event = store_.peek();
    if (!event)
        return Read::Nothing;
    copy_event_out(*event->header, event->timestamp_ns, event->data, to);
    store_.pop_peeked();
    count_damaged();
    return Read::Event;
}

// What a process wrote over in a chunk the store kept in place was counted
// recorded when the chunk was lent: lost now, and reported by the drain's
// next pass.
void StoreReader::count_damaged()
{
    if (uint64_t damaged = store_.take_damaged()) {
        ledger_.take_back_recorded(damaged);
        ledger_.count_stream_loss(StreamLoss::Refused, damaged);
        ledger_.owe_report(damaged);
    }
}

// The eventfd is a level: non-zero exactly while getnext has something.
void StoreReader::update_readable(bool shut_down)
{
    bool available = shut_down || store_.report_due() || store_.readable();
    if (available == signaled_)
        return;
    if (available)
        raise_event_fd(readable_.get());
    else
        lower_event_fd(readable_.get());
    signaled_ = available;
}

} // namespace posixtrace
