#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "posixtrace.h"
#include "stream/record_ring.hpp"

namespace posixtrace {

// An event the library generates (start, stop, filter, loss reports), queued
// in timestamp order until the merge reaches it.
struct SystemEvent {
    std::vector<uint8_t> data;
    pt_record header; // timestamp in CLOCK_MONOTONIC
};

// Merges the rings (RecordRing: the kernel's per-CPU rings) and the queue of
// system events into one sequence in timestamp order. The argument is in docs/architecture.md
// ("Ordering"); in short:
// - A ring is not in timestamp order: a program that interrupts another
//   between its reservation and its stamp (or, on preemptible kernels,
//   preempts it) stamps first but sits second. So each pass reads every
//   committed record of a ring (its committed prefix, up to the first record
//   still being written) into a window kept sorted by timestamp.
// - What a ring may still hand over is bounded below by observation: before
//   it reads a ring's producer position, a pass reads the clock; every
//   record reserved later, so at or past that position, is stamped later.
//   The first record not yet read sits at some position p; the latest pass
//   that saw the producer at or before p gives the bound. A record still
//   being written holds its ring's bound back for as long as it takes: a
//   writer is never overtaken (a stall delays delivery, and what the rings
//   cannot hold meanwhile is counted lost where it happens).
// - Everything stamped before the smallest bound, less a margin for the
//   clocks, is delivered, oldest first; nothing older can come any more.
class RingMerger {
public:
    using RecordSink = std::function<void(const pt_record &)>;
    using SystemSink = std::function<void(SystemEvent &&)>;
    // A whole chunk of a ring in timestamp order that the merge has not read
    // any of (RecordRing::whole_chunk_at), from position `from` to `to`.
    // Its records are no older than what the ring still held back, so no
    // older than the safe point of the pass; a record stamped before
    // `not_before_ns` (what was delivered last) would come late.
    struct Chunk {
        RecordRing &ring; // a sink may borrow it (RecordRing::lend_chunk)
        uint64_t from, to;
        uint64_t not_before_ns;
    };
    // Takes every record of the chunk at once, and returns the latest stamp
    // among them; or takes none: nullopt, and the merge reads them.
    using ChunkSink = std::function<std::optional<uint64_t>(const Chunk &)>;
    struct Sinks {
        RecordSink record;
        SystemSink system;
        // A record that came after younger ones were delivered. The merge
        // never delivers past a record still being written, so only a clock
        // that broke the argument above could cause it; such a record is
        // not delivered out of order but dropped (the stream counts it).
        RecordSink late;
        // Empty: no chunk is offered.
        ChunkSink chunk;
        // With a chunk sink: a chunk still being written whose first record
        // is stamped after this is not read yet, to be offered whole once
        // its writer moves on. Its ring then holds the safe point at that
        // first stamp, no earlier.
        uint64_t unfinished_waits_after_ns = UINT64_MAX;
    };

    // The margin absorbs what separates the two clocks read (the vDSO's
    // CLOCK_MONOTONIC here, bpf_ktime_get_ns in the kernel: one timekeeper,
    // nanoseconds apart) and a store's delay in becoming visible.
    static constexpr uint64_t kClockMarginNs = 20'000;

    // `now_ns`: CLOCK_MONOTONIC, read before the ring is first looked at.
    void add_ring(std::unique_ptr<RecordRing> ring, uint64_t now_ns);
    bool ready() const { return !windows_.empty() && windows_.back().reader->mapped(); }

    // One pass. `now_ns` is CLOCK_MONOTONIC read just before: the pass reads
    // every ring, then delivers in timestamp order (system events first on a
    // tie) every record and system event stamped before the safe point, and
    // returns it: nothing stamped before it can still come. `system` is
    // sorted by timestamp.
    uint64_t merge(uint64_t now_ns, std::deque<SystemEvent> &system, const Sinks &sinks);
    // Each ring whose next record is still being written is asked whether
    // its writer will ever finish it (RecordRing::give_up_stalled); the merge
    // passes the records given up. Returns how many, and when the earliest
    // of them was reserved at the latest: the bound it held its ring at. A
    // loss reported there comes before every event its writer made after it
    // (those it held back too).
    struct GivenUp {
        uint64_t records = 0;
        uint64_t reserved_by_ns = UINT64_MAX;
    };
    GivenUp pass_abandoned_records();
    // A time before every record a ring's writer took back since the last
    // forget_taken_back() (or may take back next): the latest claim on the
    // ring before it took them (RecordRing::Readable). A loss report stamped
    // there comes before every record that followed them. The writer counts
    // what it took back just after it takes it: a writer preempted between
    // the two, while another's count is reported (and forgotten), has its
    // own reported later, at a later claim.
    uint64_t taken_back_after_ns() const;
    // Whether the merge saw a writer take records back since the last
    // forget_taken_back().
    bool took_back() const { return took_back_; }
    void forget_taken_back();
    // Records the merge had claimed and not delivered when their ring's
    // writer took back younger ones, dropped since the last call: the
    // caller counts them overwritten.
    uint64_t take_dropped_older() { return std::exchange(dropped_older_, 0); }
    // Damaged records (RecordRing::Slot::Damaged) passed since the last
    // call: the caller counts them refused.
    uint64_t take_damaged() { return std::exchange(damaged_, 0); }
    // Records read or reserved and not delivered yet.
    bool holding() const;
    // The last pass saw some ring's producer move, or a ring it had not
    // read to its end.
    bool found_new() const { return found_new_; }
    // The last pass left records it had time to read: the next may come at once.
    bool behind() const;
    // Takes every record read or committed out of the merge, handing each to
    // `sink` (which drops it, or keeps what it needs of it).
    void discard_all(const RecordSink &sink);
    uint64_t last_delivered_ns() const { return last_delivered_ns_; }

private:
    struct Pending {
        uint64_t timestamp_ns;
        uint64_t position;
        const pt_record *record; // in the ring, valid until released
    };
    struct Observation {
        uint64_t producer;
        uint64_t time_ns;
    };
    // A ring and the records read from it but not delivered.
    struct Window {
        explicit Window(std::unique_ptr<RecordRing> ring) : reader(std::move(ring)) {}
        std::unique_ptr<RecordRing> reader;
        uint64_t scanned = 0;                      // position of the first record not read
        uint64_t readable = 0;                     // what the ring let the last scan read up to
        std::vector<Pending> pending;              // sorted by timestamp from `head` on
        size_t head = 0;                           // pending[0, head) are delivered
        std::deque<Observation> observations;      // oldest first
        uint64_t latest_ns = 0;                    // the latest stamp read
        uint64_t claimed_ns = 0;                   // when the ring was last claimed
        uint64_t taken_back_since_ns = UINT64_MAX; // the claim before records taken back
        bool behind = false;                       // the last round stopped before the producer
        bool in_ring_order = true;                 // `pending` is in ring order too (all appended)
        bool empty() const { return head == pending.size(); }
        const Pending &front() const { return pending[head]; }
    };

    // Returns how many records it read.
    template <class Visit>
    size_t read_committed(Window &window, uint64_t producer, Visit visit, size_t most);
    // Reads the committed prefix of `window`; returns the ring's bound.
    // Chunks are offered in time order across rings, about: the sink's
    // runs then stay close behind the safe point.
    struct Offer {
        const ChunkSink &sink;
        uint64_t horizon_ns;          // no chunk starting later than this is offered
        uint64_t unfinished_after_ns; // Sinks::unfinished_waits_after_ns
    };
    uint64_t scan(Window &window, uint64_t now_ns, const Offer &offer);
    RecordRing::Readable drop_older_than_taken_back(Window &window, RecordRing::Readable readable);
    static std::optional<uint64_t> next_stamp(const Window &window);
    uint64_t chunk_horizon(const ChunkSink &chunks) const;
    // Unfinished: the chunk at the window's position waits for its writer.
    enum class Offered { All, Refused, Ahead, Unfinished };
    Offered offer_whole_chunks(Window &window, uint64_t end, const Offer &offer);
    static void note_look(std::deque<Observation> &seen, Observation look);
    static void insert_sorted(Window &window, const Pending &record);
    void deliver(uint64_t safe_ns, std::deque<SystemEvent> &system, const Sinks &sinks);
    void deliver_record(Window &window, const Sinks &sinks);
    static void release(Window &window);

    std::vector<Window> windows_;
    uint64_t last_delivered_ns_ = 0;
    uint64_t dropped_older_ = 0;
    uint64_t damaged_ = 0;
    bool took_back_ = false; // some window's taken_back_since_ns is set
    bool found_new_ = false;
};

} // namespace posixtrace
