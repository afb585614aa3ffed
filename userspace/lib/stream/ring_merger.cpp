#include "stream/ring_merger.hpp"

#include <algorithm>

namespace posixtrace {
namespace {

// Observations a ring keeps while the merge cannot read up to the producer
// (a record being written, a copy waiting for room). Dropping one only
// makes the ring's bound older: safe, slower (RingMerger::note_look).
constexpr size_t kMaxObservations = 64;
// Records a round reads of each ring (about half a megabyte of 64-byte
// events), and rounds a pass makes before it lets readers in. A pass holds
// the stream's lock: with 64 rounds a reader reading while a burst filled
// the stream waited for whole backlogs (4.3-7.3 M events/s measured); with
// 4 it gets 7.3-9.5 M/s, and the drain keeps as much.
constexpr size_t kRecordsReadEachRound = 4096;
constexpr size_t kMostRoundsEachPass = 4;
// Whole chunks a round lets a sink take of each ring: a megabyte, so a pass
// that takes a backlog still lets readers in.
constexpr size_t kMostChunksEachRound = 16;
// How far past the oldest record not read in any ring a chunk may start to
// be offered: without it, a ring read as fast as another but written more
// slowly runs ahead in time, and what the sink took past the safe point
// grows with the backlog.
constexpr uint64_t kChunksAheadNs = 2'000'000;

} // namespace

void RingMerger::add_ring(std::unique_ptr<RecordRing> ring, uint64_t now_ns)
{
    windows_.emplace_back(std::move(ring));
    Window &window = windows_.back();
    if (!window.reader->mapped())
        return;
    window.scanned = window.reader->released();
    window.readable = window.scanned;
    window.claimed_ns = now_ns;
    window.observations.push_back({window.scanned, now_ns});
}

// Hands `visit` each committed record from `scanned` up to `producer`,
// stopping at the first one still being written, and counts the damaged
// ones it passes.
template <class Visit>
size_t RingMerger::read_committed(Window &window, uint64_t producer, Visit visit, size_t most)
{
    size_t read = 0;
    while (window.scanned < producer) {
        if (read == most) {
            window.behind = true;
            return read;
        }
        RecordRing::Record next = window.reader->at(window.scanned);
        if (next.slot == RecordRing::Slot::Busy)
            break;
        if (next.slot == RecordRing::Slot::Committed) {
            visit(next.record);
            ++read;
        }
        damaged_ += next.slot == RecordRing::Slot::Damaged;
        window.scanned += next.size;
    }
    return read;
}

// Whole chunks the sink takes are passed as read, their latest stamp the
// ring's latest; the first it leaves, and all after, are read one record at
// a time.
RingMerger::Offered RingMerger::offer_whole_chunks(Window &window, uint64_t end, const Offer &offer)
{
    uint64_t bytes = window.reader->chunk_bytes();
    for (size_t offered = 0; offered < kMostChunksEachRound; ++offered) {
        uint64_t chunk_end = window.scanned + bytes;
        if (window.scanned % bytes)
            return Offered::All;
        if (end < chunk_end)
            return next_stamp(window).value_or(0) > offer.unfinished_after_ns ? Offered::Unfinished
                                                                              : Offered::All;
        if (next_stamp(window).value_or(0) > offer.horizon_ns)
            return Offered::Ahead;
        std::optional<uint64_t> latest_ns =
            offer.sink({*window.reader, window.scanned, chunk_end, last_delivered_ns_});
        if (!latest_ns)
            return Offered::Refused;
        window.latest_ns = std::max(window.latest_ns, *latest_ns);
        window.scanned = chunk_end;
    }
    window.behind = true;
    return Offered::All;
}

// The writer took back records past the merge's claim: every record the
// merge claimed and has not delivered is older than those. POSIX_TRACE_LOOP
// overwrites the oldest first, so these go too, counted with them;
// otherwise a drain held back for a while would deliver a window of old
// records, then, after a gap, the newest. Returns what may be read now.
RecordRing::Readable RingMerger::drop_older_than_taken_back(Window &window,
                                                            RecordRing::Readable readable)
{
    uint64_t dropped = window.pending.size() - window.head;
    if (dropped) // sorted by stamp from the head on
        window.taken_back_since_ns =
            std::min(window.taken_back_since_ns, window.front().timestamp_ns);
    window.pending.resize(window.head);
    dropped += read_committed(
        window, readable.end,
        [&](const pt_record *record) {
            window.taken_back_since_ns =
                std::min<uint64_t>(window.taken_back_since_ns, record->timestamp_ns);
        },
        SIZE_MAX);
    dropped_older_ += dropped;
    if (window.scanned < readable.end)
        return readable; // a record still being written: the rest comes next time
    RecordRing::Readable next = window.reader->readable(window.scanned);
    window.readable = next.end;
    return next;
}

// The stamp of the record at the window's position, if it is committed.
std::optional<uint64_t> RingMerger::next_stamp(const Window &window)
{
    if (!window.reader->mapped() || window.scanned >= window.reader->producer())
        return std::nullopt;
    RecordRing::Record next = window.reader->at(window.scanned);
    if (next.slot != RecordRing::Slot::Committed)
        return std::nullopt;
    return next.record->timestamp_ns;
}

// A round offers chunks that start no later than a little past the oldest
// record not read in a ring of chunks.
uint64_t RingMerger::chunk_horizon(const ChunkSink &chunks) const
{
    if (!chunks)
        return 0;
    uint64_t oldest = UINT64_MAX;
    for (const Window &window : windows_)
        if (window.reader->chunk_bytes() && window.reader->in_timestamp_order())
            oldest = std::min(oldest, next_stamp(window).value_or(UINT64_MAX));
    return oldest > UINT64_MAX - kChunksAheadNs ? UINT64_MAX : oldest + kChunksAheadNs;
}

uint64_t RingMerger::scan(Window &window, uint64_t now_ns, const Offer &offer)
{
    window.reader->refresh();
    uint64_t producer = window.reader->producer();
    auto &seen = window.observations;
    window.behind = false;
    if (producer == window.scanned && seen.size() == 1) {
        // All read, nothing new (an idle thread's lane): this look bounds it.
        seen.front() = {producer, now_ns};
        window.claimed_ns = now_ns; // all of it the reader's
        return now_ns;
    }
    found_new_ = true;
    RecordRing::Readable readable = window.reader->readable(window.scanned);
    window.readable = readable.end;
    if (readable.taken_back) {
        window.taken_back_since_ns = std::min(window.taken_back_since_ns, window.claimed_ns);
        took_back_ = true;
        readable = drop_older_than_taken_back(window, readable);
    }
    if (readable.claimed)
        window.claimed_ns = now_ns;
    // What a look saw is the producer itself, past what the ring lets this
    // round read (and past a range its writer took back meanwhile): every
    // record at or past it is reserved after `now_ns`.
    producer = window.reader->producer();
    note_look(seen, {producer, now_ns});
    auto visit = [&](const pt_record *record) {
        insert_sorted(window, {record->timestamp_ns, window.scanned, record});
        window.latest_ns = std::max<uint64_t>(window.latest_ns, record->timestamp_ns);
    };
    size_t read = 0;
    Offered offered = Offered::All;
    // The chunk begun is read to its end, if it is whole, so that the
    // whole chunks after it may be taken at once.
    if (uint64_t bytes = offer.sink ? window.reader->chunk_bytes() : 0;
        bytes && window.reader->in_timestamp_order()) {
        uint64_t boundary = (window.scanned + bytes - 1) & ~(bytes - 1);
        if (boundary <= readable.end) {
            read = read_committed(window, boundary, visit, kRecordsReadEachRound);
            if (window.scanned == boundary)
                offered = offer_whole_chunks(window, readable.end, offer);
        }
    }
    if (offered == Offered::Ahead) // left for a later round, whole
        window.behind = true;
    else if (offered != Offered::Unfinished && !window.behind)
        read_committed(window, readable.end, visit, kRecordsReadEachRound - read);
    if (readable.more && window.scanned == readable.end)
        window.behind = true; // the ring lets the next round read on
    // The bound is the time of the latest look whose producer position was
    // at or before the first record not read: that record and every later
    // one were reserved after that look, and stamped after it.
    while (seen.size() > 1 && seen[1].producer <= window.scanned)
        seen.pop_front();
    // A ring in timestamp order bounds what it still holds by what it
    // handed over last, and by the first record of a chunk left to wait.
    if (window.reader->in_timestamp_order() && window.scanned < producer) {
        uint64_t waiting_ns = offered == Offered::Unfinished ? next_stamp(window).value_or(0) : 0;
        return std::max({seen.front().time_ns, window.latest_ns, waiting_ns});
    }
    return seen.front().time_ns;
}

// One look a pass, however many rounds. A look that found the producer where
// the latest did replaces it: the same position, seen later, bounds later.
// Past kMaxObservations one goes, never the oldest (the bound now) nor the
// next (the bound once the merge reaches it: a ring that lets the merge
// read only so far past what it holds back, LoopRingMirror, keeps that one
// within reach, not always a later one), but the one whose neighbours lie
// closest, so that the bound still moves at each small step of the reader.
void RingMerger::note_look(std::deque<Observation> &seen, Observation look)
{
    Observation &latest = seen.back();
    if (latest.time_ns == look.time_ns)
        return;
    if (latest.producer == look.producer && seen.size() > 1) {
        latest.time_ns = look.time_ns;
        return;
    }
    seen.push_back(look);
    if (seen.size() <= kMaxObservations)
        return;
    size_t dropped = 2;
    for (size_t i = 3; i + 1 < seen.size(); ++i)
        if (seen[i + 1].producer - seen[i - 1].producer <
            seen[dropped + 1].producer - seen[dropped - 1].producer)
            dropped = i;
    seen.erase(seen.begin() + std::ptrdiff_t(dropped));
}

void RingMerger::insert_sorted(Window &window, const Pending &record)
{
    auto &pending = window.pending;
    if (window.empty() || pending.back().timestamp_ns <= record.timestamp_ns) {
        pending.push_back(record); // the usual case: ring order is time order
        return;
    }
    auto at = std::upper_bound(pending.begin() + std::ptrdiff_t(window.head), pending.end(),
                               record.timestamp_ns,
                               [](uint64_t ts, const Pending &p) { return ts < p.timestamp_ns; });
    pending.insert(at, record);
    window.in_ring_order = false;
}

// In rounds: each reads a bounded number of records of each ring and
// delivers what it can, so the records are still in the cache when they are
// delivered, and what the merge holds stays small however far behind it is.
uint64_t RingMerger::merge(uint64_t now_ns, std::deque<SystemEvent> &system, const Sinks &sinks)
{
    uint64_t safe_ns = 0;
    found_new_ = false;
    for (size_t round = 0; round < kMostRoundsEachPass; ++round) {
        uint64_t bound = now_ns;
        Offer offer{sinks.chunk, chunk_horizon(sinks.chunk), sinks.unfinished_waits_after_ns};
        for (Window &window : windows_)
            bound = std::min(bound, scan(window, now_ns, offer));
        safe_ns = bound > kClockMarginNs ? bound - kClockMarginNs : 0;
        deliver(safe_ns, system, sinks);
        for (Window &window : windows_)
            release(window);
        if (!behind())
            break;
    }
    return safe_ns;
}

bool RingMerger::behind() const
{
    return std::any_of(windows_.begin(), windows_.end(),
                       [](const Window &window) { return window.behind; });
}

void RingMerger::deliver(uint64_t safe_ns, std::deque<SystemEvent> &system, const Sinks &sinks)
{
    // Source 0 is the system queue (first on a tie), source i + 1 window i.
    struct Head {
        uint64_t timestamp_ns;
        size_t source;
        bool operator>(const Head &other) const
        {
            return timestamp_ns != other.timestamp_ns ? timestamp_ns > other.timestamp_ns
                                                      : source > other.source;
        }
    };
    std::vector<Head> heap;
    heap.reserve(windows_.size() + 1);
    auto push = [&](size_t source) {
        if (source == 0 ? system.empty() : windows_[source - 1].empty())
            return;
        uint64_t ts = source == 0 ? system.front().header.timestamp_ns
                                  : windows_[source - 1].front().timestamp_ns;
        heap.push_back({ts, source});
        std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    };
    for (size_t source = 0; source <= windows_.size(); ++source)
        push(source);
    while (!heap.empty() && heap.front().timestamp_ns < safe_ns) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
        size_t source = heap.back().source;
        heap.pop_back();
        if (source == 0) {
            SystemEvent event = std::move(system.front());
            system.pop_front();
            // Ours to stamp: never before what was delivered already.
            event.header.timestamp_ns =
                std::max<uint64_t>(event.header.timestamp_ns, last_delivered_ns_);
            last_delivered_ns_ = event.header.timestamp_ns;
            sinks.system(std::move(event));
        } else {
            // A run of this ring's records, as long as they come before
            // every other source's next: no heap work per record.
            Window &window = windows_[source - 1];
            auto before_others = [&](uint64_t ts) {
                if (ts >= safe_ns)
                    return false;
                if (heap.empty())
                    return true;
                const Head &other = heap.front();
                return ts < other.timestamp_ns ||
                       (ts == other.timestamp_ns && source < other.source);
            };
            do
                deliver_record(window, sinks);
            while (!window.empty() && before_others(window.front().timestamp_ns));
        }
        push(source);
    }
}

void RingMerger::deliver_record(Window &window, const Sinks &sinks)
{
    const Pending &next = window.front();
    ++window.head;
    if (next.timestamp_ns < last_delivered_ns_) {
        sinks.late(*next.record);
        return;
    }
    last_delivered_ns_ = next.timestamp_ns;
    sinks.record(*next.record);
}

// The producer gets back the space before the oldest record still pending
// (records are delivered in time order, not always in ring order).
void RingMerger::release(Window &window)
{
    auto &pending = window.pending;
    pending.erase(pending.begin(), pending.begin() + std::ptrdiff_t(window.head));
    window.head = 0;
    uint64_t oldest = window.scanned;
    if (pending.empty())
        window.in_ring_order = true;
    else if (window.in_ring_order) // every record appended: the first is the oldest
        oldest = pending.front().position;
    else
        for (const Pending &record : pending)
            oldest = std::min(oldest, record.position);
    // An idle ring's position has not moved: a lane's would look at its
    // table of chunks for nothing, a thousand lanes every pass.
    if (oldest != window.reader->released())
        window.reader->release(oldest);
}

RingMerger::GivenUp RingMerger::pass_abandoned_records()
{
    GivenUp given_up;
    for (Window &window : windows_) {
        if (!window.reader->mapped() || window.scanned >= window.readable)
            continue;
        RecordRing::Record next = window.reader->at(window.scanned);
        if (next.slot != RecordRing::Slot::Busy || !window.reader->give_up_stalled(window.scanned))
            continue;
        // The latest look at or before its position: it was reserved after.
        given_up.reserved_by_ns =
            std::min(given_up.reserved_by_ns, window.observations.front().time_ns);
        ++given_up.records;
        window.scanned += next.size;
    }
    return given_up;
}

uint64_t RingMerger::taken_back_after_ns() const
{
    uint64_t after = UINT64_MAX;
    for (const Window &window : windows_)
        after = std::min({after, window.taken_back_since_ns, window.claimed_ns});
    return after;
}

void RingMerger::forget_taken_back()
{
    took_back_ = false;
    for (Window &window : windows_)
        window.taken_back_since_ns = UINT64_MAX;
}

bool RingMerger::holding() const
{
    for (const Window &window : windows_)
        if (!window.empty() ||
            (window.reader->mapped() && window.scanned < window.reader->producer()))
            return true;
    return false;
}

void RingMerger::discard_all(const RecordSink &sink)
{
    for (Window &window : windows_) {
        for (size_t i = window.head; i < window.pending.size(); ++i)
            sink(*window.pending[i].record);
        window.pending.clear();
        window.head = 0;
        // A record still being written is read (and judged) by a later pass.
        // What the writer reserves meanwhile is left to the next pass.
        if (!window.reader->mapped())
            continue;
        uint64_t producer = window.reader->producer();
        RecordRing::Readable readable{};
        do {
            readable = window.reader->readable(window.scanned);
            window.readable = readable.end;
            read_committed(
                window, readable.end, [&](const pt_record *record) { sink(*record); }, SIZE_MAX);
        } while (readable.more && window.scanned == readable.end && window.scanned < producer);
        release(window);
    }
}

} // namespace posixtrace
