#include "sources/lanes/chunk_pool.hpp"

#include <sys/mman.h>

namespace posixtrace {

ChunkPool::ChunkPool(size_t chunk_bytes, uint32_t capacity)
    : chunk_bytes_(chunk_bytes), capacity_(capacity),
      region_(chunk_bytes * capacity, "posixtrace-lane"),
      links_(sizeof(std::atomic<uint32_t>) * capacity, "posixtrace-lane-links")
{
    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
    // A burst fills chunks faster than the system can give them a page at a
    // time: huge pages where the system has them.
    if (region_.valid())
        madvise(region_.data(), region_.bytes(), MADV_HUGEPAGE);
}

namespace {

uint64_t head_of(uint64_t changes, uint32_t chunk_plus_one)
{
    return (changes << 32) | chunk_plus_one;
}

} // namespace

uint32_t ChunkPool::pop()
{
    auto *links = reinterpret_cast<std::atomic<uint32_t> *>(links_.data());
    uint64_t head = free_head_.load(std::memory_order_acquire);
    for (;;) {
        uint32_t first = uint32_t(head);
        if (first == 0)
            return kNone;
        uint32_t next = links[first - 1].load(std::memory_order_relaxed);
        if (free_head_.compare_exchange_weak(head, head_of((head >> 32) + 1, next),
                                             std::memory_order_acquire, std::memory_order_acquire))
            return first - 1;
    }
}

uint32_t ChunkPool::take()
{
    if (!valid())
        return kNone;
    uint32_t taken = taken_.load(std::memory_order_relaxed);
    do {
        if (taken >=
            allowed_.load(std::memory_order_relaxed) + lent_.load(std::memory_order_relaxed))
            return kNone;
    } while (!taken_.compare_exchange_weak(taken, taken + 1, std::memory_order_relaxed));
    if (uint32_t chunk = pop(); chunk != kNone)
        return chunk;
    // None free (or one on its way back): a new one, while the range has one.
    uint32_t made = made_.fetch_add(1, std::memory_order_relaxed);
    if (made < capacity_)
        return made;
    made_.fetch_sub(1, std::memory_order_relaxed);
    taken_.fetch_sub(1, std::memory_order_relaxed);
    return kNone;
}

void ChunkPool::give(uint32_t chunk)
{
    push(chunk);
    taken_.fetch_sub(1, std::memory_order_release);
}

void ChunkPool::lend(uint32_t)
{
    lent_.fetch_add(1, std::memory_order_relaxed);
}

// Given first: a writer in between finds more room, never less.
void ChunkPool::give_lent(uint32_t chunk)
{
    give(chunk);
    lent_.fetch_sub(1, std::memory_order_relaxed);
}

void ChunkPool::push(uint32_t chunk)
{
    auto *links = reinterpret_cast<std::atomic<uint32_t> *>(links_.data());
    uint64_t head = free_head_.load(std::memory_order_relaxed);
    do {
        links[chunk].store(uint32_t(head), std::memory_order_relaxed);
    } while (!free_head_.compare_exchange_weak(head, head_of((head >> 32) + 1, chunk + 1),
                                               std::memory_order_release,
                                               std::memory_order_relaxed));
}

void ChunkPool::allow(uint32_t chunks)
{
    allowed_.store(chunks < capacity_ ? chunks : capacity_, std::memory_order_relaxed);
}

void ChunkPool::allow_one_more()
{
    uint32_t allowed = allowed_.load(std::memory_order_relaxed);
    while (allowed < capacity_ &&
           !allowed_.compare_exchange_weak(allowed, allowed + 1, std::memory_order_relaxed)) {
    }
}

void ChunkPool::release_free_pages()
{
    // Taken out first, so no writer writes a chunk while its pages go.
    uint32_t popped = kNone, chunk;
    auto *links = reinterpret_cast<std::atomic<uint32_t> *>(links_.data());
    while ((chunk = pop()) != kNone) {
        madvise(address(chunk), chunk_bytes_, MADV_DONTNEED);
        links[chunk].store(popped == kNone ? 0 : popped + 1, std::memory_order_relaxed);
        popped = chunk;
    }
    while (popped != kNone) {
        uint32_t next = links[popped].load(std::memory_order_relaxed);
        push(popped);
        popped = next == 0 ? kNone : next - 1;
    }
}

} // namespace posixtrace
