#include "store/stream_store.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace posixtrace {

StreamStore::StreamStore(size_t stream_size, int full_policy, int64_t realtime_offset_ns)
    : buffer_(stream_size +
              (full_policy == POSIX_TRACE_UNTIL_FULL ? kStopEventBytes + kLossEventsBytes : 0)),
      realtime_offset_ns_(realtime_offset_ns)
{
}

// On a tie the stored event first: a system event comes before the records
// stamped with it, as the merge delivers them.
const StoredEvent *StreamStore::peek()
{
    if (!peek_current_) {
        peek_result_ = look();
        peek_current_ = true;
    }
    return peek_result_;
}

const StoredEvent *StreamStore::look()
{
    std::optional<StoredEvent> lent = lent_.oldest_before(settled_before_ns_);
    uint64_t lent_ns = lent ? uint64_t(int64_t(lent->timestamp_ns) + realtime_offset_ns_) : 0;
    if (!buffer_.empty() && (!lent || buffer_.front().timestamp_ns <= lent_ns)) {
        const pt_record &front = buffer_.front();
        peeked_ = {&front, front.data, front.timestamp_ns};
        peeked_lent_ = false;
        return &peeked_;
    }
    if (!lent)
        return nullptr;
    peeked_ = {lent->header, lent->data, lent_ns};
    peeked_lent_ = true;
    return &peeked_;
}

void StreamStore::pop_peeked()
{
    changed();
    taken_since_pass_ = true;
    lent_.read_up_to(uint64_t(int64_t(peeked_.timestamp_ns) - realtime_offset_ns_));
    if (!peeked_lent_) {
        buffer_.pop();
        return;
    }
    lent_.pop_oldest();
}

void StreamStore::note_pass(uint64_t monotonic_ns)
{
    if (taken_since_pass_)
        last_taken_seen_ns_ = monotonic_ns;
    taken_since_pass_ = false;
    read_lately_ = last_taken_seen_ns_ && monotonic_ns - last_taken_seen_ns_ <= kReadLatelyNs;
}

void StreamStore::clear()
{
    changed();
    buffer_.clear();
    lent_.clear();
    beside_ = 0;
    full_ = false;
    head_loss_ = {};
    overwritten_ = {};
    resume_due_ = false;
    refused_ = {};
}

void StreamStore::overwrite_oldest_for(size_t bytes)
{
    while (!buffer_.fits(bytes) && !buffer_.empty())
        overwrite_oldest();
}

void StreamStore::overwrite_before(uint64_t timestamp_ns)
{
    while (!buffer_.empty() && buffer_.front().timestamp_ns < timestamp_ns)
        overwrite_oldest();
}

void StreamStore::overwrite_oldest()
{
    changed();
    const pt_record &oldest = buffer_.front();
    if (oldest.event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data carried;
        std::memcpy(&carried, oldest.data, sizeof carried);
        head_loss_.in_kernel += carried.lost_in_kernel;
        head_loss_.in_stream += carried.lost_in_stream;
    } else if (oldest.event_id != POSIX_TRACE_RESUME) {
        ++head_loss_.in_stream;
        ++overwritten_.events;
    }
    head_loss_.timestamp_ns = oldest.timestamp_ns;
    last_dropped_ns_ = oldest.timestamp_ns;
    resume_due_ = true;
    full_ = true;
    ++overwritten_.records;
    buffer_.pop();
}

StreamStore::Overwritten StreamStore::take_overwritten()
{
    Overwritten overwritten = overwritten_;
    overwritten_ = {};
    return overwritten;
}

std::optional<LossReport> StreamStore::take_overwritten_report()
{
    if (!head_loss_.any())
        return std::nullopt;
    LossReport report = head_loss_;
    head_loss_ = {};
    return report;
}

std::optional<uint64_t> StreamStore::take_resume_stamp()
{
    if (!resume_due_)
        return std::nullopt;
    resume_due_ = false;
    return buffer_.empty() ? last_dropped_ns_ : buffer_.front().timestamp_ns;
}

// Overflow and resume events are only ever the trace system's own: the
// kernel records no system event id for posix_trace_event().
bool StreamStore::refuse(const pt_record &record, const void *data)
{
    if (record.event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data carried;
        std::memcpy(&carried, data, sizeof carried);
        refused_.in_kernel += carried.lost_in_kernel;
        refused_.in_stream += carried.lost_in_stream;
        return false;
    }
    if (record.event_id == POSIX_TRACE_RESUME)
        return false;
    ++refused_.in_stream;
    return true;
}

LossReport StreamStore::take_refused()
{
    LossReport refused = refused_;
    refused_ = {};
    return refused;
}

// ---- the policies ------------------------------------------------------------

void FullPolicy::after_read(StreamStore &store) const
{
    if (store.empty())
        store.set_full(false);
}

namespace {

// The oldest events make room for the newest.
class LoopPolicy final : public FullPolicy {
public:
    Decision make_room(StreamStore &store, const pt_record &, size_t bytes,
                       StreamPhase) const override
    {
        store.overwrite_oldest_for(bytes);
        return Decision::Store;
    }
    void after_read(StreamStore &store) const override { store.set_full(false); }
};

// The stream stops once full; it keeps room for its stop event and the
// report of its losses. Nothing it keeps is ever overwritten, so the
// lanes' chunks may stay where they are until read.
class UntilFullPolicy final : public FullPolicy {
public:
    Decision make_room(StreamStore &store, const pt_record &record, size_t bytes,
                       StreamPhase phase) const override
    {
        if (phase == StreamPhase::StoppedFull)
            return Decision::Refuse;
        bool stop_event = record.event_id == POSIX_TRACE_STOP && record.cpu == PT_CPU_SYSTEM;
        size_t room_kept = stop_event ? 0 : kRoomKept;
        return store.fits(bytes + room_kept) ? Decision::Store : Decision::StopThenRefuse;
    }
    bool lends() const override { return true; }
    // Chunks are lent while a reader keeps the stream nearly empty: they are
    // then read and reused while warm. A stream nobody reads yet copies
    // instead, so that the memory it grows into is the drain's to fault in,
    // not the emitting threads'. A stream being read keeps lending past
    // that backlog: a reader a few milliseconds behind a burst would
    // otherwise bring on the drain's copying, which on a host with two CPUs
    // takes the time the reader and the emitting thread need, and falls
    // further behind. And lent chunks lie ahead of the merge: an
    // older event that comes after them and finds no room stops the stream
    // there, and what was lent from then on goes (the stop event stays the
    // last). So they never take the last of the room, which the merge hands
    // out in timestamp order; a small stream lends nothing.
    bool has_room_to_lend(const StreamStore &store, size_t bytes, StreamPhase phase) const override
    {
        size_t kept_for_the_merge = std::max(store.capacity() / 8, kLendingStopsBeforeFullBytes);
        bool backlog_allowed = store.held() < kLendsWhileHoldingBelowBytes || store.read_lately();
        return phase == StreamPhase::Running && backlog_allowed &&
               store.fits_beside(bytes + kRoomKept + kept_for_the_merge);
    }
    void after_flush(StreamStore &) const override {}

private:
    static inline const size_t kRoomKept = kStopEventBytes + kLossEventsBytes;
    static constexpr size_t kLendingStopsBeforeFullBytes = 4u << 20;
    static constexpr size_t kLendsWhileHoldingBelowBytes = 16u << 20;
};

// A full stream empties into its log.
class FlushPolicy final : public FullPolicy {
public:
    Decision make_room(StreamStore &store, const pt_record &, size_t bytes,
                       StreamPhase) const override
    {
        return store.fits(bytes) ? Decision::Store : Decision::FlushThenStore;
    }
};

} // namespace

std::unique_ptr<FullPolicy> FullPolicy::make(int stream_full_policy)
{
    switch (stream_full_policy) {
    case POSIX_TRACE_LOOP:
        return std::make_unique<LoopPolicy>();
    case POSIX_TRACE_FLUSH:
        return std::make_unique<FlushPolicy>();
    default: // POSIX_TRACE_UNTIL_FULL: the attributes admit no other
        return std::make_unique<UntilFullPolicy>();
    }
}

void StreamStore::push_held(const pt_record &header, const std::vector<uint8_t> &payload)
{
    std::optional<pt_namespace_ids> ids = namespace_ids_of(header, payload.data());
    push(header, payload.data(), ids ? &*ids : nullptr);
}

// Once round the buffer: each event held is taken from the front and put
// back at the end, after the events to merge stamped before it. The room
// it gives back is the room it takes again, so the events held always fit.
uint64_t StreamStore::merge_in(const std::vector<HeldEvent> &events)
{
    changed();
    uint64_t refused = 0;
    auto next = events.begin();
    auto put_before = [&](uint64_t timestamp_ns) {
        for (; next != events.end() && next->header.timestamp_ns < timestamp_ns; ++next) {
            if (fits(stored_event_size(record_payload_bytes(next->header))))
                push_held(next->header, next->data);
            else
                ++refused;
        }
    };
    std::vector<uint8_t> data;
    for (size_t left = buffer_.used(); left > 0;) {
        pt_record header = buffer_.front();
        size_t payload = record_payload_bytes(header);
        data.assign(buffer_.front().data, buffer_.front().data + payload);
        left -= stored_event_size(payload);
        buffer_.pop();
        put_before(header.timestamp_ns);
        push_held(header, data);
    }
    put_before(UINT64_MAX);
    return refused;
}

} // namespace posixtrace
