#include "stages/record_pipeline.hpp"

#include <posix_trace/thread_db.h>

#include <algorithm>
#include <cstring>

namespace posixtrace {

RecordPipeline::RecordPipeline(pid_t creator, StreamUserEvents &user_events,
                               const FilterHistory &filters)
    : filters_(filters), processes_(user_events), library_threads_(creator),
      user_ids_(user_events, filters)
{
}

void RecordPipeline::deliver(const pt_record &record, const uint8_t *data, ProcessProbes *probes,
                             Delivery &out)
{
    out.action = Delivery::Action::Skip;
    RecordKind kind = classify(record);
    if (kind == RecordKind::Lifecycle)
        processes_.follow(record, probes);
    else if (library_threads_.hides(record, data, kind))
        return;
    else if (kind == RecordKind::ThreadEvent)
        agents_.notify(record);
    if (record.flags & PT_RECORD_NOTICE_ONLY)
        return;
    switch (cut_offs_.of(record.timestamp_ns)) {
    case CutOffs::Verdict::Keep:
        break;
    case CutOffs::Verdict::Cleared:
        return;
    case CutOffs::Verdict::Refused:
        out.action = Delivery::Action::Refuse;
        out.refused_events = events_lost_with(record);
        return;
    }
    out.header = &record;
    out.data = data;
    switch (kind) {
    case RecordKind::UserEvent:
        deliver_user_event(record, out);
        return;
    case RecordKind::ThreadReport:
        deliver_thread_report(record, data, out);
        return;
    case RecordKind::ThreadEvent:
        deliver_thread_event(record, data, out);
        return;
    default:
        out.action = Delivery::Action::Store;
        return;
    }
}

void RecordPipeline::deliver_user_event(const pt_record &record, Delivery &out)
{
    std::optional<trace_event_id_t> id = user_ids_.stream_id(record);
    if (!id)
        return;
    out.action = Delivery::Action::Store;
    if (*id != record.event_id) {
        out.rewritten_header = record;
        out.rewritten_header.event_id = *id;
        out.header = &out.rewritten_header;
    }
}

// Sleeps and wakeups are tracked only where both are recorded for every
// thread, and not for a process whose thread agent is told.
void RecordPipeline::deliver_thread_event(const pt_record &record, const uint8_t *data,
                                          Delivery &out)
{
    out.action = Delivery::Action::Store;
    if (std::optional<pt_td_data> counted = library_threads_.corrected_concurrency(record, data)) {
        out.rewritten_data.thread = *counted;
        out.data = &out.rewritten_data.thread;
        return;
    }
    if (record.data_len == sizeof(pt_td_data) &&
        !filters_.filters(POSIX_TRACE_TD_EVENT_ID(PT_TD_SLEEP)) &&
        !filters_.filters(POSIX_TRACE_TD_EVENT_ID(PT_TD_READY)) &&
        !agents_.told(pid_t(record.pid))) {
        pt_td_data about;
        std::memcpy(&about, data, sizeof about);
        hidden_wakeups_.track(record, about);
    }
}

// The kernel's report that it hid scheduler events of one thread counts
// the wakeup it hid too, when one is known to be missing.
void RecordPipeline::deliver_thread_report(const pt_record &record, const uint8_t *data,
                                           Delivery &out)
{
    posix_trace_overflow_data &lost = out.rewritten_data.lost;
    lost = {};
    std::memcpy(&lost, data, std::min<size_t>(record.data_len, sizeof lost));
    if (hidden_wakeups_.woken_unseen(record)) {
        ++lost.lost;
        ++lost.lost_in_kernel;
    }
    out.action = Delivery::Action::Store;
    out.data = &lost;
    out.rewritten_header = record; // its data are `lost`, whatever length it said
    out.rewritten_header.data_len = sizeof lost;
    out.header = &out.rewritten_header;
    out.hidden_in_kernel = lost.lost_in_kernel;
    out.resume_after = !filters_.filters(POSIX_TRACE_RESUME);
}

uint64_t RecordPipeline::drop(const pt_record &record, ProcessProbes *probes)
{
    if (classify(record) == RecordKind::Lifecycle)
        processes_.follow(record, probes);
    if ((record.flags & PT_RECORD_NOTICE_ONLY) || cut_offs_.cleared(record.timestamp_ns))
        return 0;
    return events_lost_with(record);
}

// The kernel's report about a thread stands for the events it counts
// (notices, which are no events, are never asked about).
uint64_t RecordPipeline::events_lost_with(const pt_record &record) const
{
    if (record.event_id != POSIX_TRACE_OVERFLOW)
        return 1;
    posix_trace_overflow_data lost{};
    std::memcpy(&lost, record.data, std::min<size_t>(record.data_len, sizeof lost));
    return lost.lost;
}

} // namespace posixtrace
