#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "log/log_writer.hpp"
#include "stream/chunk_judge.hpp"
#include "stream/ring_merger.hpp"
#include "util/fork_wiped_memory.hpp"

namespace posixtrace {

// The lanes' chunks that a POSIX_TRACE_FLUSH stream with a log hands over
// whole (log::LogWriter, "Runs"). A whole chunk of a lane that the merge
// has not read goes into a run at once, one pass over its records with no
// merge and no store; the stream holds its runs with its other events, in
// the room of the stream, until it flushes; the flush hands them over
// among the merged events in the order of their first stamps, each block
// saying up to when the log is complete. The log's reader restores the
// order (docs/log-format.md). Runs are laid out in memory of their own,
// mapped once and reused: a page the drain faults in costs more than the
// events it holds.
class LaneRuns {
public:
    // What the stream decides about the records of a chunk, and the names
    // of their types.
    struct Judge {
        ChunkJudge records;
        log::LogWriter::NameLookup name_of;
    };
    // What a run must have room for: a lane's chunk converted, its names.
    static constexpr size_t kRunBytesAtLeast = 80 * 1024;
    static constexpr size_t kRunBytesAtMost = 256 * 1024 - log::BlockEncoder::memory_for(0);
    // Runs held before the stream flushes, whatever its size; memory for
    // three times as many is mapped (the runs of earlier flushes are
    // written meanwhile), and reused: memory touched for the first time
    // costs more than the events it holds.
    static constexpr size_t kHeldBytesBeforeFlush = 4u << 20;
    static constexpr size_t kMappedBytes = 3 * kHeldBytesBeforeFlush;
    // What a reader of the log holds at most, runs handed over whose events
    // are not complete yet (the merge's safe point held back) and runs
    // held: past it, chunks go through the merge. Half of what a reader
    // accepts (log::kMaxOverlapBytes), the rest for the merged events.
    static constexpr size_t kMostOpenBytes = log::kMaxOverlapBytes / 2;

    LaneRuns(log::LogWriter &log, int64_t realtime_offset_ns);
    bool valid() const { return memory_.valid(); }

    // Takes every record of the chunk into a run: the bytes that added to
    // the stream, and the latest stamp (CLOCK_MONOTONIC); or nullopt, and
    // nothing taken.
    struct Taken {
        size_t bytes;
        uint32_t events;
        uint64_t latest_ns;
    };
    std::optional<Taken> take(const RingMerger::Chunk &chunk, const Judge &judge);
    size_t bytes_held() const { return bytes_held_; }

    // The flush, as it appends the stream's events (realtime stamps) in
    // order: the runs that start no later than `next_ns`, after the block
    // of events appended so far; UINT64_MAX: every run left. Every event
    // the stream gives the log later is stamped no earlier than `later_ns`.
    void hand_over_before(uint64_t next_ns, uint64_t later_ns);
    // Forgets the runs held (posix_trace_clear, a log that failed);
    // returns their events.
    uint64_t drop_all();
    // Hands each event of the runs held to `event` (its stamp realtime, as
    // in the log; no image, no CPU), then forgets them as drop_all() does;
    // returns how many.
    using EventVisitor = log::BlockEncoder::EventVisitor;
    uint64_t give_back(const EventVisitor &event);

private:
    struct Run {
        log::BlockEncoder block;
        size_t slot;
    };
    enum class Encoded {
        All,
        Refused, // a record the merge must judge
        NoRoom,  // the run has room for the records, not for their names too
    };
    Encoded encode(const RingMerger::Chunk &chunk, const Judge &judge, uint64_t &latest_ns);
    bool name(uint32_t id, size_t rest_bound, const Judge &judge);
    bool open_run();
    void close_run();
    std::optional<size_t> free_slot();
    uint64_t next_first_ns() const;

    log::LogWriter &log_;
    int64_t realtime_offset_ns_;
    size_t run_capacity_;
    size_t slot_bytes_;
    ForkWipedMemory memory_;
    std::vector<size_t> free_slots_;
    // Slots of runs handed over, and the tickets of their writes, in the
    // order they were handed over (and are written).
    std::deque<std::pair<size_t, uint64_t>> written_slots_;
    std::optional<Run> open_;
    std::vector<uint32_t> named_by_take_; // by the take under way, undone if it fails
    std::vector<Run> held_;               // sorted by first stamp once the flush begins
    // Runs handed over with events at or past the latest watermark: their
    // latest stamp and their bytes.
    std::vector<std::pair<uint64_t, size_t>> open_in_log_;
    size_t open_in_log_bytes_ = 0;
    size_t next_ = 0; // the next to hand over, in held_
    bool sorted_ = false;
    size_t bytes_held_ = 0;
    uint64_t events_held_ = 0;
};

} // namespace posixtrace
