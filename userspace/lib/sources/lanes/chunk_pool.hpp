#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "util/fork_wiped_memory.hpp"

namespace posixtrace {

// The memory of a process's lanes (LocalRing), in chunks of one size taken as
// the lanes fill and handed back once the merge has read them: a burst of one
// thread may take what the stream allows, and an idle thread holds one chunk.
// The chunks lie in one range of address space reserved up front, pages
// taken from the system as they are first written; a child of fork finds
// the range zeroed (ForkWipedMemory). Taking and handing back are lock-free
// and async-signal-safe: a writer in a signal handler takes chunks too.
class ChunkPool {
public:
    static constexpr uint32_t kNone = UINT32_MAX;

    // `chunk_bytes`: a power of two, a page at least; `capacity`: the most
    // chunks that may ever exist.
    ChunkPool(size_t chunk_bytes, uint32_t capacity);
    ChunkPool(const ChunkPool &) = delete;
    ChunkPool &operator=(const ChunkPool &) = delete;

    bool valid() const { return region_.valid() && links_.valid(); }
    size_t chunk_bytes() const { return chunk_bytes_; }
    uint32_t capacity() const { return capacity_; }
    uint8_t *address(uint32_t chunk) const { return region_.data() + size_t(chunk) * chunk_bytes_; }
    const uint8_t *base() const { return region_.data(); }

    // A chunk, free or made, while fewer than allowed are taken; kNone
    // otherwise.
    uint32_t take();
    // A chunk nobody reads or writes any more is free again.
    void give(uint32_t chunk);
    // A taken chunk whose records a reader keeps in place (the stream's
    // store, LentChunks) counts no more against what the writers may take:
    // they keep the room the stream allows them, as if it were copied out.
    // It comes back with give_lent().
    void lend(uint32_t chunk);
    void give_lent(uint32_t chunk);
    uint32_t lent() const { return lent_.load(std::memory_order_relaxed); }

    // How many chunks may be taken at once.
    void allow(uint32_t chunks);
    void allow_one_more();
    uint32_t made() const { return made_.load(std::memory_order_relaxed); }
    uint32_t taken() const { return taken_.load(std::memory_order_relaxed); }
    // The pages of the free chunks go back to the system (they read zero
    // when next written). While writers run: a chunk taken meanwhile is
    // simply not among them.
    void release_free_pages();

private:
    uint32_t pop();
    void push(uint32_t chunk);

    size_t chunk_bytes_;
    uint32_t capacity_;
    ForkWipedMemory region_;
    ForkWipedMemory links_; // std::atomic<uint32_t>[capacity]: the next free chunk + 1
    // The free list's head: (changes << 32) | (chunk + 1). The count of
    // changes keeps a writer whose read of a link went stale (another took
    // and gave the chunk back meanwhile) from installing it.
    std::atomic<uint64_t> free_head_{0};
    std::atomic<uint32_t> made_{0};
    std::atomic<uint32_t> taken_{0};
    std::atomic<uint32_t> allowed_{0};
    std::atomic<uint32_t> lent_{0};
};

} // namespace posixtrace
