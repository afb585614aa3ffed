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
    // read from the record as it came: a stage may have rewritten its data
    std::optional<pt_namespace_ids> ids = namespace_ids_of(record, data);
    store(*delivery.header, delivery.data, ids ? &*ids : nullptr);
    if (delivery.hidden_in_kernel)
        ledger_.count_kernel_loss(0, delivery.hidden_in_kernel, 0);
    if (delivery.resume_after)
        store(owner_.system_record(POSIX_TRACE_RESUME, record.timestamp_ns, 0), nullptr);
}

void StreamIntake::store(const pt_record &record, const void *data,
                         const pt_namespace_ids *namespace_ids)
{
    // Only a clock that broke the merge's argument brings a record older
    // than one read already (a chunk kept in place is read ahead of the
    // merge).
    if (store_.read_past(record.timestamp_ns)) {
        note_loss(StreamLoss::Late, 1);
        return;
    }
    size_t bytes = stored_event_size(record_payload_bytes(record.data_len, namespace_ids));
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
    push(record, data, namespace_ids);
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
    store_.overwrite_before(uint64_t(int64_t(monotonic_ns) + store_.realtime_offset_ns()));
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
void StreamIntake::push(pt_record record, const void *data, const pt_namespace_ids *namespace_ids)
{
    record.timestamp_ns = uint64_t(int64_t(record.timestamp_ns) + store_.realtime_offset_ns());
    store_.push(record, data, namespace_ids);
    ledger_.count_recorded();
}

// The stream's last event is the stop event, stamped with the first event
// that did not fit, in the room the store kept for it. What the lanes' chunks
// kept in place hold from then on is refused as what came after it.
void StreamIntake::stop_full(uint64_t timestamp_ns)
{
    owner_.stop_recording_while_full();
    store_.set_full(true);
    ledger_.set_overrun();
    if (uint64_t after = store_.cut_lent_from(timestamp_ns)) {
        ledger_.take_back_recorded(after);
        ledger_.count_stream_loss(StreamLoss::Refused, after);
        store_.add_refused(after);
    }
    posix_trace_stop_data cause{POSIX_TRACE_STOP_STREAM_FULL};
    if (!filters_.filters(POSIX_TRACE_STOP))
        push(owner_.system_record(POSIX_TRACE_STOP, timestamp_ns, sizeof cause), &cause);
}

namespace {

// Every record committed, none older than the one before it nor than what
// the merge delivered, and each one the stages would store as it is.
std::optional<StreamIntake::JudgedChunk> judge_chunk(const RingMerger::Chunk &chunk,
                                                     const ChunkJudge &judge)
{
    StreamIntake::JudgedChunk judged;
    ChunkWalk walk = walk_chunk(chunk, judge, [&judged](const pt_record &record, uint64_t, bool) {
        if (judged.events++ == 0)
            judged.first_ns = record.timestamp_ns;
        judged.last_ns = record.timestamp_ns;
        judged.bytes += stored_event_size(record.data_len);
        return true;
    });
    if (walk != ChunkWalk::Whole || judged.events == 0)
        return std::nullopt;
    return judged;
}

} // namespace

// A chunk lent holds all of its memory until read, and counts only its
// events against the stream's room: a lane's chunk closed early (its thread
// exited, say) is copied instead. And it lies ahead of the merge's safe
// point, which a record still being written holds back: past a few passes
// ahead, chunks wait in their lanes for the merge to take them in order.
bool StreamIntake::worth_lending(const RingMerger::Chunk &chunk, const JudgedChunk &judged) const
{
    return judged.bytes * 4 >= (chunk.to - chunk.from) * 3 &&
           judged.first_ns <= store_.settled_before() + kMostLentAheadNs;
}

std::optional<uint64_t> StreamIntake::lend_chunk(const RingMerger::Chunk &chunk)
{
    if (!lends_chunks())
        return std::nullopt;
    std::optional<JudgedChunk> judged = judge_chunk(chunk, *judge_);
    if (!judged || !worth_lending(chunk, *judged) ||
        !store_.lends_in_order(&chunk.ring, judged->first_ns) ||
        !policy_.has_room_to_lend(store_, judged->bytes, phase_))
        return std::nullopt;
    std::optional<LentChunk> memory = chunk.ring.lend_chunk(chunk.from);
    if (!memory)
        return std::nullopt;
    store_.lend(&chunk.ring, {*memory, 0, uint32_t(chunk.to - chunk.from), judged->first_ns,
                              judged->last_ns, judged->bytes, judged->events});
    ledger_.count_recorded(judged->events);
    count_damaged();
    return judged->last_ns;
}

// What the process wrote over in a chunk between its judging and its
// reading is lost there.
void StreamIntake::count_damaged()
{
    if (uint64_t damaged = store_.take_damaged()) {
        ledger_.take_back_recorded(damaged);
        note_loss(StreamLoss::Refused, damaged);
    }
}

} // namespace posixtrace
