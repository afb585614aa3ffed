#include "sources/lanes/local_ring.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

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

// errno is the caller's: a signal handler may be writing.
void wake_dozing_reader(LocalRing::ChunkRules &rules)
{
    if (!rules.reader_dozing.load(std::memory_order_relaxed) ||
        !rules.reader_dozing.exchange(0, std::memory_order_acq_rel))
        return;
    int saved_errno = errno;
    uint64_t one = 1;
    [[maybe_unused]] ssize_t written = write(rules.reader_wakeup_fd, &one, sizeof one);
    errno = saved_errno; // a full counter wakes the reader as well
}

// Done with, not to be read: the reader skips it.
void mark_discarded(uint32_t *header, uint32_t length)
{
    __atomic_store_n(header, (length & ~BPF_RINGBUF_BUSY_BIT) | BPF_RINGBUF_DISCARD_BIT,
                     __ATOMIC_RELEASE);
}

uint64_t round_up(uint64_t position, uint64_t chunk_bytes)
{
    return (position + chunk_bytes - 1) & ~(chunk_bytes - 1);
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
// if the ring may hold one more and the pool has one, or, under `rules`,
// one of its own taken back. A dozing reader has a chunk to read now.
bool LocalRing::start_chunk(uint64_t position, ChunkRules *rules)
{
    if (rules)
        wake_dozing_reader(*rules);
    uint64_t after_bytes = rules ? rules->after_bytes.load(std::memory_order_relaxed) : 0;
    size_t chunk_bytes = pool_.chunk_bytes();
    // The table's entry for it is free once the chunk there was handed back.
    uint64_t handed_back = __atomic_load_n(&handed_back_, __ATOMIC_ACQUIRE);
    if (position + chunk_bytes - handed_back > uint64_t(most_chunks_) * chunk_bytes)
        return false;
    uint32_t chunk = ChunkPool::kNone;
    if (after_bytes && position - handed_back >= after_bytes)
        chunk = take_back_oldest_chunk(position, rules->counted);
    if (chunk == ChunkPool::kNone)
        chunk = pool_.take();
    if (chunk == ChunkPool::kNone && after_bytes)
        chunk = take_back_oldest_chunk(position, rules->counted);
    if (chunk == ChunkPool::kNone)
        return false;
    // Published by the producer position's release store, as the records.
    __atomic_store_n(&entry_of(position), chunk, __ATOMIC_RELAXED);
    chunk_end_ = position + chunk_bytes;
    return true;
}

// The oldest chunk the reader has not claimed, before `position` (the one
// just closed, if it is the only one: the claimed records are older still,
// but the reader has them). Its records are counted, and its entry in the
// table left to the reader, which marks it so that the chunk is not handed
// back from there (note_taken_back()).
uint32_t LocalRing::take_back_oldest_chunk(uint64_t position, std::atomic<uint64_t> &counted)
{
    size_t chunk_bytes = pool_.chunk_bytes();
    uint64_t claim = __atomic_load_n(&claim_, __ATOMIC_ACQUIRE);
    uint64_t from;
    do {
        from = round_up(claim, chunk_bytes);
        if (from + chunk_bytes > position)
            return ChunkPool::kNone;
    } while (!__atomic_compare_exchange_n(&claim_, &claim, from + chunk_bytes, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    uint32_t chunk = __atomic_load_n(&entry_of(from), __ATOMIC_RELAXED) & ~kChunkFlags;
    counted.fetch_add(committed_records_in(chunk), std::memory_order_relaxed);
    return chunk;
}

// The writer's own records, all finished (a lane's writer finishes one
// before it reserves the next), from the start of the chunk to its end.
uint64_t LocalRing::committed_records_in(uint32_t chunk) const
{
    const uint8_t *start = pool_.address(chunk);
    size_t chunk_bytes = pool_.chunk_bytes();
    uint64_t committed = 0;
    for (size_t offset = 0; offset + BPF_RINGBUF_HDR_SZ <= chunk_bytes;) {
        uint32_t length =
            __atomic_load_n(reinterpret_cast<const uint32_t *>(start + offset), __ATOMIC_RELAXED);
        if (!(length & (BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT)))
            ++committed;
        offset += span_of(length & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT));
    }
    return committed;
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

pt_record *LocalRing::reserve(uint32_t data_len, ChunkRules *rules)
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
        if (!start_chunk(position, rules)) {
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

// Marked as a chunk taken back is, so that it is not handed back from here.
std::optional<LentChunk> LocalRing::lend_chunk(uint64_t position)
{
    size_t chunk_bytes = pool_.chunk_bytes();
    if (!mapped() || position % chunk_bytes || position + chunk_bytes > claimed_ ||
        position < __atomic_load_n(&handed_back_, __ATOMIC_RELAXED))
        return std::nullopt;
    uint32_t &entry = entry_of(position);
    uint32_t chunk = __atomic_load_n(&entry, __ATOMIC_RELAXED);
    if (chunk & kChunkFlags)
        return std::nullopt;
    __atomic_fetch_or(&entry, kChunkFlags, __ATOMIC_RELAXED);
    pool_.lend(chunk);
    return LentChunk{&pool_, chunk, pool_.address(chunk)};
}

void LocalRing::release(uint64_t position)
{
    hand_back_chunks_before(position);
    RecordRing::release(position);
}

// What was reserved up to `wanted` is the reader's; a range the writer took
// back first is noted. Returns the new claim. Called with no range noted
// that the reader has not passed: the ranges noted in one call follow each
// other (the writer takes back from its own claim on), so they make one.
uint64_t LocalRing::claim(uint64_t wanted, bool &taken_back)
{
    for (;;) {
        uint64_t seen = claimed_;
        uint64_t producer = __atomic_load_n(&producer_pos_, __ATOMIC_ACQUIRE);
        uint64_t target = std::max(seen, std::min(producer, wanted));
        if (target == seen && __atomic_load_n(&claim_, __ATOMIC_ACQUIRE) == seen)
            return seen; // nothing new, nothing taken back
        if (__atomic_compare_exchange_n(&claim_, &seen, target, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            claimed_ = target;
            return target;
        }
        // The writer took back whole chunks from the first chunk boundary
        // at or past the last claim (and past the claims it moved since).
        note_taken_back(round_up(claimed_, pool_.chunk_bytes()), seen);
        taken_back = true;
        claimed_ = seen;
    }
}

// The chunks of [from, to) are the writer's again, their memory in use
// elsewhere in the ring: their entries are marked, so that they are not
// handed back from here. The entries themselves stay until handed_back_
// passes them (the writer reuses an entry only then).
void LocalRing::note_taken_back(uint64_t from, uint64_t to)
{
    for (uint64_t at = from; at < to; at += pool_.chunk_bytes())
        __atomic_fetch_or(&entry_of(at), kChunkFlags, __ATOMIC_RELAXED);
    if (taken_to_ != from || taken_to_ == taken_from_) // not the end of the range noted
        taken_from_ = from;
    taken_to_ = to;
}

void LocalRing::pass_taken_back(uint64_t &scanned)
{
    if (taken_to_ == taken_from_ || scanned < taken_from_)
        return;
    scanned = std::max(scanned, taken_to_);
    taken_from_ = taken_to_ = 0;
}

RecordRing::Readable LocalRing::readable_within(uint64_t &scanned, uint64_t ahead)
{
    pass_taken_back(scanned);
    if (taken_to_ != taken_from_) // the reader has not reached it: no claim
        return {taken_from_, true, false};
    bool taken_back = false;
    uint64_t end = claim(scanned + std::min(ahead, UINT64_MAX - scanned), taken_back);
    if (taken_to_ != taken_from_ && scanned < taken_from_)
        return {taken_from_, true, true, taken_back}; // up to the range taken back, first
    pass_taken_back(scanned);
    return {end, end < __atomic_load_n(&producer_pos_, __ATOMIC_ACQUIRE), true, taken_back};
}

void LocalRing::skip_unread(bool writer_gone)
{
    bool taken_back = false;
    uint64_t producer = claim(UINT64_MAX, taken_back);
    taken_from_ = taken_to_ = 0;
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
