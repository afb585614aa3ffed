#include "sources/lanes/local_ring.hpp"

namespace posixtrace {
namespace {

unsigned log2_of(size_t power_of_two)
{
    return unsigned(__builtin_ctzll(power_of_two));
}

uint32_t *header_of(pt_record *record)
{
    return reinterpret_cast<uint32_t *>(reinterpret_cast<uint8_t *>(record) - BPF_RINGBUF_HDR_SZ);
}

// Done with, not to be read: the reader skips it.
void mark_discarded(uint32_t *header, uint32_t length)
{
    __atomic_store_n(header, (length & ~BPF_RINGBUF_BUSY_BIT) | BPF_RINGBUF_DISCARD_BIT,
                     __ATOMIC_RELEASE);
}

} // namespace

LocalRing::LocalRing(ChunkPool &pool, uint32_t most_chunks)
    : pool_(pool), most_chunks_(most_chunks),
      table_(sizeof(uint32_t) * most_chunks, "posixtrace-lane-chunks")
{
    if (pool.valid() && table_.valid() && most_chunks >= 2 &&
        (most_chunks & (most_chunks - 1)) == 0)
        view_chunks(&consumer_pos_, &producer_pos_, pool.base(), log2_of(pool.chunk_bytes()),
                    table(), most_chunks);
}

// The writer reached the end of its chunk at `position`: the next chunk,
// if the ring may hold one more and the pool has one.
bool LocalRing::start_chunk(uint64_t position)
{
    size_t chunk_bytes = pool_.chunk_bytes();
    // The table's entry for it is free once the chunk there was handed back.
    uint64_t handed_back = __atomic_load_n(&handed_back_, __ATOMIC_ACQUIRE);
    if (position + chunk_bytes - handed_back > uint64_t(most_chunks_) * chunk_bytes)
        return false;
    uint32_t chunk = pool_.take();
    if (chunk == ChunkPool::kNone)
        return false;
    // Published by the producer position's release store, as the records.
    __atomic_store_n(&entry_of(position), chunk, __ATOMIC_RELAXED);
    chunk_end_ = position + chunk_bytes;
    return true;
}

uint64_t LocalRing::close_chunk()
{
    uint64_t position = producer_pos_;
    if (position >= chunk_end_)
        return position;
    __atomic_store_n(reinterpret_cast<uint32_t *>(const_cast<uint8_t *>(address_of(position))),
                     uint32_t(chunk_end_ - position - BPF_RINGBUF_HDR_SZ) | BPF_RINGBUF_DISCARD_BIT,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&producer_pos_, chunk_end_, __ATOMIC_RELEASE);
    return chunk_end_;
}

pt_record *LocalRing::reserve(uint32_t data_len)
{
    uint32_t length = uint32_t(sizeof(pt_record)) + data_len;
    uint64_t span = span_of(length);
    uint64_t position = producer_pos_; // ours alone
    if (!mapped() || span > pool_.chunk_bytes()) {
        lost_.store(lost_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
    }
    if (position + span > chunk_end_) {
        position = close_chunk();
        if (!start_chunk(position)) {
            lost_.store(lost_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            return nullptr;
        }
    }
    // Busy first, then the producer past it: a reader that sees the new
    // producer position sees a busy header, never the bytes of an old one.
    auto *header = reinterpret_cast<uint32_t *>(const_cast<uint8_t *>(address_of(position)));
    __atomic_store_n(header, length | BPF_RINGBUF_BUSY_BIT, __ATOMIC_RELAXED);
    __atomic_store_n(&unfinished_at_, position + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&producer_pos_, position + span, __ATOMIC_RELEASE);
    return reinterpret_cast<pt_record *>(header + BPF_RINGBUF_HDR_SZ / sizeof *header);
}

void LocalRing::commit(pt_record *record)
{
    uint32_t *length = header_of(record);
    __atomic_store_n(&unfinished_at_, 0, __ATOMIC_RELAXED);
    __atomic_store_n(length, *length & ~BPF_RINGBUF_BUSY_BIT, __ATOMIC_RELEASE);
}

void LocalRing::discard(pt_record *record)
{
    uint32_t *header = header_of(record);
    __atomic_store_n(&unfinished_at_, 0, __ATOMIC_RELAXED);
    mark_discarded(header, *header);
}

void LocalRing::hand_back_chunks_before(uint64_t position)
{
    size_t chunk_bytes = pool_.chunk_bytes();
    uint64_t end = position & ~uint64_t(chunk_bytes - 1);
    for (uint64_t at = handed_back_; at < end; at += chunk_bytes) {
        uint32_t entry = __atomic_load_n(&entry_of(at), __ATOMIC_RELAXED);
        if (!(entry & kChunkFlags)) // a record given up there may still be written
            pool_.give(entry);
        __atomic_store_n(&handed_back_, at + chunk_bytes, __ATOMIC_RELEASE);
    }
}

void LocalRing::release(uint64_t position)
{
    hand_back_chunks_before(position);
    RecordRing::release(position);
}

void LocalRing::skip_unread(bool writer_gone)
{
    uint64_t producer = __atomic_load_n(&producer_pos_, __ATOMIC_ACQUIRE);
    // Unless nobody can write it, the chunk of the last record stays: its
    // writer may still be at it.
    hand_back_chunks_before(writer_gone || producer == 0 ? producer : producer - 1);
    __atomic_store_n(&consumer_pos_, producer, __ATOMIC_RELEASE);
}

bool LocalRing::discard_if_busy(uint64_t position)
{
    auto *header = reinterpret_cast<uint32_t *>(const_cast<uint8_t *>(address_of(position)));
    uint32_t length = __atomic_load_n(header, __ATOMIC_ACQUIRE);
    return (length & BPF_RINGBUF_BUSY_BIT) &&
           __atomic_compare_exchange_n(header, &length,
                                       (length & ~BPF_RINGBUF_BUSY_BIT) | BPF_RINGBUF_DISCARD_BIT,
                                       false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

bool LocalRing::give_up_reported_by_reader(uint64_t position)
{
    if (!mapped() || !discard_if_busy(position))
        return false;
    __atomic_fetch_or(&entry_of(position), kChunkFlags, __ATOMIC_RELAXED);
    return true;
}

// The writer's latest record is the only one that can be busy: a lane has
// one writer, which finishes a record before it reserves the next. A record
// still busy is in a chunk not handed back (the reader stops at it, or, if
// it gave it up, keeps the chunk), so it is this ring's.
uint64_t LocalRing::abandon_unfinished()
{
    uint64_t unfinished = __atomic_exchange_n(&unfinished_at_, 0, __ATOMIC_ACQ_REL);
    if (!mapped() || unfinished == 0 || !discard_if_busy(unfinished - 1))
        return 0;
    given_up_.fetch_add(1, std::memory_order_relaxed);
    return 1;
}

} // namespace posixtrace
