#include "stream/local_ring.hpp"

#include <sys/mman.h>

namespace posixtrace {

LocalRing::LocalRing(size_t bytes) : memory_(bytes, "posixtrace-lane")
{
    if (memory_.valid() && bytes == memory_.bytes() && (bytes & (bytes - 1)) == 0)
        view(&consumer_pos_, &producer_pos_, memory_.data(), bytes);
}

pt_record *LocalRing::reserve(uint32_t data_len)
{
    size_t bytes = memory_.bytes();
    uint32_t length = uint32_t(sizeof(pt_record)) + data_len;
    uint64_t span = span_of(length);
    uint64_t position = producer_pos_; // ours alone
    // Bytes to the end of the ring, a multiple of 8: a filler's if the
    // record does not fit before the end.
    uint64_t to_end = bytes - (position & (bytes - 1));
    uint64_t filler = span > to_end ? to_end : 0;
    if (!mapped() || data_len > bytes ||
        position + filler + span - __atomic_load_n(&consumer_pos_, __ATOMIC_ACQUIRE) > bytes) {
        lost_.store(lost_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
    }
    if (filler) {
        __atomic_store_n(reinterpret_cast<uint32_t *>(memory_.data() + (position & (bytes - 1))),
                         uint32_t(filler - BPF_RINGBUF_HDR_SZ) | BPF_RINGBUF_DISCARD_BIT,
                         __ATOMIC_RELAXED);
        position += filler;
    }
    // Busy first, then the producer past it: a reader that sees the new
    // producer position sees a busy header, never the bytes of an old one.
    uint8_t *header = memory_.data() + (position & (bytes - 1));
    __atomic_store_n(reinterpret_cast<uint32_t *>(header), length | BPF_RINGBUF_BUSY_BIT,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&producer_pos_, position + span, __ATOMIC_RELEASE);
    return reinterpret_cast<pt_record *>(header + BPF_RINGBUF_HDR_SZ);
}

namespace {

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

void LocalRing::commit(pt_record *record)
{
    uint32_t *length = header_of(record);
    __atomic_store_n(length, *length & ~BPF_RINGBUF_BUSY_BIT, __ATOMIC_RELEASE);
}

void LocalRing::discard(pt_record *record)
{
    uint32_t *header = header_of(record);
    mark_discarded(header, *header);
}

void LocalRing::skip_unread()
{
    __atomic_store_n(&consumer_pos_, __atomic_load_n(&producer_pos_, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELEASE);
}

bool LocalRing::give_up(uint64_t position)
{
    if (!give_up_reported_by_reader(position))
        return false;
    given_up_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

bool LocalRing::give_up_reported_by_reader(uint64_t position)
{
    if (!mapped())
        return false;
    auto *header =
        reinterpret_cast<uint32_t *>(memory_.data() + (position & (memory_.bytes() - 1)));
    uint32_t length = __atomic_load_n(header, __ATOMIC_ACQUIRE);
    if (!(length & BPF_RINGBUF_BUSY_BIT) ||
        !__atomic_compare_exchange_n(header, &length,
                                     (length & ~BPF_RINGBUF_BUSY_BIT) | BPF_RINGBUF_DISCARD_BIT,
                                     false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return false;
    return true;
}

void LocalRing::release_pages()
{
    if (mapped())
        madvise(memory_.data(), memory_.bytes(), MADV_DONTNEED);
}

uint64_t LocalRing::abandon_unfinished()
{
    if (!mapped())
        return 0;
    uint64_t given_up = 0;
    size_t bytes = memory_.bytes();
    uint64_t end = __atomic_load_n(&producer_pos_, __ATOMIC_ACQUIRE);
    for (uint64_t at = __atomic_load_n(&consumer_pos_, __ATOMIC_ACQUIRE); at < end;) {
        auto *header = reinterpret_cast<uint32_t *>(memory_.data() + (at & (bytes - 1)));
        uint32_t length = __atomic_load_n(header, __ATOMIC_ACQUIRE);
        if ((length & BPF_RINGBUF_BUSY_BIT) && give_up(at))
            ++given_up;
        at += span_of(length & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT));
    }
    return given_up;
}

} // namespace posixtrace
