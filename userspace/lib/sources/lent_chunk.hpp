#pragma once
#include <cstdint>

namespace posixtrace {

class ChunkPool;

// A whole chunk of a ring made of chunks (LocalRing), its records kept where
// they are by a reader (the stream's store) instead of copied out: its
// writer never sees it again, and the reader gives it back to `pool`
// (ChunkPool::give_lent) once it has read it.
struct LentChunk {
    ChunkPool *pool;
    uint32_t chunk;
    const uint8_t *bytes; // the chunk's memory
};

} // namespace posixtrace
