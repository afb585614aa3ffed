#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "attributes/attributes.hpp"
#include "events/namespace_ids.hpp"
#include "posixtrace.h"
#include "store/event_buffer.hpp"
#include "store/lent_chunks.hpp"

namespace posixtrace {

// Where a stream is in its life. Only Running records; the two stopped
// phases remember who stopped it: the stream's own full policy (an
// UNTIL_FULL stream runs again once read empty) or its full log (it runs
// again at posix_trace_clear or posix_trace_start).
enum class StreamPhase { Suspended, Running, StoppedFull, StoppedLogFull, ShutDown };

// Losses to report in one overflow event, and the time to stamp it with.
struct LossReport {
    uint64_t in_kernel = 0;
    uint64_t in_stream = 0;
    uint64_t timestamp_ns = 0; // realtime
    bool any() const { return in_kernel + in_stream != 0; }
};

// The room UNTIL_FULL keeps for the events that close a full stream: the
// stop event, then the report of what was lost while it was full.
inline const size_t kStopEventBytes = stored_event_size(sizeof(posix_trace_stop_data));
inline const size_t kLossEventsBytes =
    stored_event_size(sizeof(posix_trace_overflow_data)) + stored_event_size(0);

// The events a stream holds, in the order they are read, and the losses
// the full policies leave for the reader: LOOP's overwritten events,
// reported before the oldest one left (an overflow, then a resume event),
// and what UNTIL_FULL refused while full, reported when it runs again. The
// stream decides when; this keeps the counts and the status.
class StreamStore {
public:
    // Room for `stream_size` bytes of events, plus the closing room of the
    // policy (POSIX: events whose sizes add up to stream-min-size all fit).
    // `realtime_offset_ns`: realtime - monotonic, the stream's, for the
    // chunks it keeps in place.
    StreamStore(size_t stream_size, int full_policy, int64_t realtime_offset_ns = 0);
    int64_t realtime_offset_ns() const { return realtime_offset_ns_; }

    bool valid() const { return buffer_.valid(); }
    size_t capacity() const { return buffer_.capacity(); }
    // Nothing held, in the store or in place.
    bool empty() const { return buffer_.empty() && lent_.empty(); }
    bool fits(size_t bytes) const { return buffer_.fits(bytes) && fits_beside(bytes); }
    // Bytes of the stream's events held beside the store until the stream
    // flushes (LaneRuns), or kept where a lane wrote them (lend()): they
    // take room in the stream too.
    bool fits_beside(size_t bytes) const { return held() + bytes <= buffer_.capacity(); }
    // The bytes of the events it holds, stored, beside or in place.
    size_t held() const { return buffer_.used() + beside_ + lent_.bytes(); }
    void hold_beside(size_t bytes) { beside_ += bytes; }
    void forget_beside() { beside_ = 0; }
    // `namespace_ids`: those of the event's thread, if it has some.
    void push(const pt_record &record, const void *data,
              const pt_namespace_ids *namespace_ids = nullptr)
    {
        changed();
        buffer_.push(record, data, namespace_ids);
    }

    // A lane's chunk kept in place, its records stamped (CLOCK_MONOTONIC)
    // no earlier than the events pushed so far: they are read among the
    // events pushed later, in timestamp order, once settle_before() passed
    // them. `lane`: any token of the lane, whose chunks follow each other.
    void lend(const void *lane, const LentChunks::Lent &chunk)
    {
        changed();
        lent_.add(lane, chunk);
    }
    // Whether a chunk of `lane` whose records are stamped from `first_ns` on
    // would be read in its place: after what may have been read already,
    // and after the lane's chunks lent before.
    bool lends_in_order(const void *lane, uint64_t first_ns) const
    {
        return first_ns >= settled_before_ns_ && lent_.follows(lane, first_ns);
    }
    // Nothing stamped before `monotonic_ns` can come any more (the merge's
    // safe point): what was lent before it may be read.
    void settle_before(uint64_t monotonic_ns)
    {
        changed();
        settled_before_ns_ = std::max(settled_before_ns_, monotonic_ns);
    }
    uint64_t settled_before() const { return settled_before_ns_; }
    // The chunks lent go back to their pool now (the stream ends: its
    // sources' memory is let go next).
    void give_back_lent()
    {
        changed();
        lent_.clear();
    }
    // The records lent and stamped at or after `monotonic_ns` go (the stream
    // stopped there, full); returns how many events.
    uint64_t cut_lent_from(uint64_t monotonic_ns)
    {
        changed();
        return lent_.cut_from(monotonic_ns);
    }
    // Records lent that could not be read as lent (the process wrote over
    // them), since the last call: they are lost.
    uint64_t take_damaged() { return lent_.take_damaged(); }
    // Whether a record stamped `monotonic_ns` would come after a younger one
    // was read.
    bool read_past(uint64_t monotonic_ns) const { return lent_.read_past(monotonic_ns); }

    // The oldest event a reader may take, its stamp realtime (stored, or
    // lent and settled); nullptr when there is none. Valid until the next
    // call that changes the store; asked again before that, the same answer
    // without a look (a reader asks twice a read: whether the stream is
    // readable, then the event).
    const StoredEvent *peek();
    // Takes the event peek() returned.
    void pop_peeked();
    // The drain's pass at `monotonic_ns` begins: whether a reader took
    // events lately (read_lately()) is judged here, once a pass, since a
    // read is too frequent to stamp.
    void note_pass(uint64_t monotonic_ns);
    // Events were taken within kReadLatelyNs before the latest pass.
    bool read_lately() const { return read_lately_; }
    static constexpr uint64_t kReadLatelyNs = 10'000'000;
    bool readable() { return peek() != nullptr; }
    // Empties it and forgets every loss it held (posix_trace_clear).
    void clear();
    // An event held apart, its stamp realtime as the store's.
    struct HeldEvent {
        // Its data, then the namespace ids its header says it has (only the
        // store's own events are held with them).
        std::vector<uint8_t> data;
        pt_record header; // last: its data[] is not these
    };
    // Puts `events` (sorted by stamp) among those held, in time order, each
    // before the first held one stamped later; returns how many did not
    // fit.
    uint64_t merge_in(const std::vector<HeldEvent> &events);

    // LOOP: the oldest events go until `bytes` fit (or none is left). A
    // dropped loss report hands its counts on to the next.
    void overwrite_oldest_for(size_t bytes);
    // LOOP: the events stamped before `timestamp_ns` go, as above: the
    // transport overwrote younger ones (a lane took back its oldest).
    void overwrite_before(uint64_t timestamp_ns);
    // What was overwritten since the last call: records of any kind (each
    // sets the overrun status), and the events among them (each a loss).
    struct Overwritten {
        uint64_t records = 0;
        uint64_t events = 0;
    };
    Overwritten take_overwritten();
    bool report_due() const { return head_loss_.any() || resume_due_; }
    // The overflow report due before the oldest event left, if any.
    std::optional<LossReport> take_overwritten_report();
    // The stamp of the resume event due after it, if any.
    std::optional<uint64_t> take_resume_stamp();

    // UNTIL_FULL: an event refused while full; true if it is a loss of its
    // own (a refused loss report hands its counts on, a resume is no event).
    bool refuse(const pt_record &record, const void *data);
    void add_refused(uint64_t in_stream) { refused_.in_stream += in_stream; }
    // What was refused while full, to report once the stream runs again.
    LossReport take_refused();

    // POSIX's full status: set by the policy that filled it, cleared as
    // the policy empties it.
    bool full() const { return full_; }
    void set_full(bool full) { full_ = full; }

private:
    void overwrite_oldest();
    void push_held(const pt_record &header, const std::vector<uint8_t> &payload);
    // Every call that can change what peek() finds says so.
    void changed() { peek_current_ = false; }
    const StoredEvent *look();

    EventBuffer buffer_;
    LentChunks lent_;
    int64_t realtime_offset_ns_;
    uint64_t settled_before_ns_ = 0; // monotonic
    bool peeked_lent_ = false;
    size_t beside_ = 0;
    bool full_ = false;
    LossReport head_loss_;         // LOOP overwrote the oldest events
    Overwritten overwritten_;      // not taken into the stream's counts yet
    bool resume_due_ = false;      // a resume event follows head_loss_
    uint64_t last_dropped_ns_ = 0; // realtime; LOOP's latest overwritten event
    LossReport refused_;           // UNTIL_FULL refused them while full
    StoredEvent peeked_{};
    const StoredEvent *peek_result_ = nullptr;
    bool peek_current_ = false;
    bool taken_since_pass_ = false;
    uint64_t last_taken_seen_ns_ = 0; // monotonic; the pass that saw events taken
    bool read_lately_ = false;
};

// One object per stream full policy: what becomes of an event that does
// not fit, and when the store stops being full. The stream carries out the
// decision (it owns the kernel's state and the log).
class FullPolicy {
public:
    enum class Decision {
        Store,          // it fits now (LOOP made room)
        Refuse,         // UNTIL_FULL, already stopped
        StopThenRefuse, // UNTIL_FULL: the stream stops, this event is refused
        FlushThenStore, // FLUSH: everything held goes to the log first
    };
    static std::unique_ptr<FullPolicy> make(int stream_full_policy);
    virtual ~FullPolicy() = default;

    virtual Decision make_room(StreamStore &store, const pt_record &record, size_t bytes,
                               StreamPhase phase) const = 0;
    // Whether the store may keep lanes' chunks in place (LentChunks), and
    // has room for one of `bytes` now; false leaves the chunk's records to
    // come one by one, through make_room().
    virtual bool lends() const { return false; }
    virtual bool has_room_to_lend(const StreamStore &, size_t /*bytes*/, StreamPhase) const
    {
        return false;
    }
    // A reader took an event: the store stays full until read empty, but
    // under LOOP the room taken is room made.
    virtual void after_read(StreamStore &store) const;
    // Everything held went to the log: full no more, except under
    // UNTIL_FULL, which stays stopped until it is read empty or cleared.
    virtual void after_flush(StreamStore &store) const { store.set_full(false); }
};

} // namespace posixtrace
