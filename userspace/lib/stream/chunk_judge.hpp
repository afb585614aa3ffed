#pragma once
#include <cstdint>
#include <functional>

#include "posixtrace.h"

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

} // namespace posixtrace
