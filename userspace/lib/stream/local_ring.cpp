#include "stream/local_ring.hpp"

namespace posixtrace {

LocalRing::LocalRing(size_t bytes) : memory_(bytes, "posixtrace-lane", MirroredMemory::OnFork::Drop)
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
    if (!mapped() || data_len > bytes ||
        position + span - __atomic_load_n(&consumer_pos_, __ATOMIC_ACQUIRE) > bytes) {
        lost_.store(lost_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
    }
    // Busy first, then the producer past it: a reader that sees the new
    // producer position sees a busy header, never the bytes of an old one.
    uint8_t *header = memory_.data() + (position & (bytes - 1));
    __atomic_store_n(reinterpret_cast<uint32_t *>(header), length | BPF_RINGBUF_BUSY_BIT,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&producer_pos_, position + span, __ATOMIC_RELEASE);
    return reinterpret_cast<pt_record *>(header + BPF_RINGBUF_HDR_SZ);
}

void LocalRing::commit(pt_record *record)
{
    auto *length =
        reinterpret_cast<uint32_t *>(reinterpret_cast<uint8_t *>(record) - BPF_RINGBUF_HDR_SZ);
    __atomic_store_n(length, *length & ~BPF_RINGBUF_BUSY_BIT, __ATOMIC_RELEASE);
}

} // namespace posixtrace
