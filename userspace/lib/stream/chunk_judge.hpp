#pragma once
#include <cstdint>
#include <functional>

#include "posixtrace.h"
#include "stream/ring_merger.hpp"

namespace posixtrace {

// What the stream decides about the records of a lane's chunk taken whole
// (a log's run, a chunk the store keeps in place) instead of record by
// record through the stages; each false leaves the chunk to the merge.
struct ChunkJudge {
    // Not cut off (posix_trace_clear), at CLOCK_MONOTONIC.
    std::function<bool(uint64_t monotonic_ns)> kept;
    // A user event the stream stores as the lane wrote it (numbered as the
    // lane numbers it).
    std::function<bool(const pt_record &)> as_numbered;
};

enum class ChunkWalk { Whole, Refused, Stopped };

// Walks a lane's chunk to take it whole: each committed record, stamped no
// earlier than the one before it (the first no earlier than the chunk may
// begin, and not cut off), a user event stored as the lane numbered it, is
// handed in order to `take(record, rest, new_type)`: `rest`, the chunk's
// bytes from that record on; `new_type`, its type is not the one before's.
// Refused at the first record the merge has to judge itself (still being
// written, damaged, out of order, cut off, numbered otherwise); Stopped when
// `take` returns false.
template <class Take>
ChunkWalk walk_chunk(const RingMerger::Chunk &chunk, const ChunkJudge &judge, Take &&take)
{
    uint64_t latest_ns = chunk.not_before_ns;
    bool first = true;
    uint32_t judged_id = UINT32_MAX; // the latest type judged: a chunk has few
    for (uint64_t at = chunk.from; at < chunk.to;) {
        RecordRing::Record next = chunk.ring.at(at);
        uint64_t rest = chunk.to - at;
        at += next.size;
        if (next.slot == RecordRing::Slot::Busy || next.slot == RecordRing::Slot::Damaged)
            return ChunkWalk::Refused;
        if (next.slot == RecordRing::Slot::Discarded)
            continue;
        const pt_record &record = *next.record;
        if (record.timestamp_ns < latest_ns || (first && !judge.kept(record.timestamp_ns)))
            return ChunkWalk::Refused;
        bool new_type = record.event_id != judged_id;
        if (new_type && !judge.as_numbered(record))
            return ChunkWalk::Refused;
        judged_id = record.event_id;
        first = false;
        latest_ns = record.timestamp_ns;
        if (!take(record, rest, new_type))
            return ChunkWalk::Stopped;
    }
    return ChunkWalk::Whole;
}

} // namespace posixtrace
