#include "stream/ring_reader.hpp"

#include <linux/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

namespace posixtrace {

RingReader::RingReader(int ring_fd, size_t ring_bytes)
    : ring_bytes_(ring_bytes), page_size_(size_t(sysconf(_SC_PAGESIZE)))
{
    void *consumer = mmap(nullptr, page_size_, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
    if (consumer == MAP_FAILED)
        return;
    // The producer page is followed by the data pages, mapped twice so a
    // record that wraps around the end reads as one contiguous block.
    void *producer = mmap(nullptr, page_size_ + 2 * ring_bytes, PROT_READ, MAP_SHARED, ring_fd,
                          off_t(page_size_));
    if (producer == MAP_FAILED) {
        munmap(consumer, page_size_);
        return;
    }
    consumer_pos_ = static_cast<uint64_t *>(consumer);
    producer_pos_ = static_cast<const uint64_t *>(producer);
    data_ = static_cast<const uint8_t *>(producer) + page_size_;
    released_ = __atomic_load_n(consumer_pos_, __ATOMIC_ACQUIRE);
}

RingReader::~RingReader()
{
    if (!data_)
        return;
    munmap(consumer_pos_, page_size_);
    munmap(const_cast<uint64_t *>(producer_pos_), page_size_ + 2 * ring_bytes_);
}

uint64_t RingReader::producer() const
{
    return __atomic_load_n(producer_pos_, __ATOMIC_ACQUIRE);
}

RingReader::Record RingReader::at(uint64_t position) const
{
    const uint8_t *header = data_ + (position & (ring_bytes_ - 1));
    uint32_t length = __atomic_load_n(reinterpret_cast<const uint32_t *>(header), __ATOMIC_ACQUIRE);
    if (length & BPF_RINGBUF_BUSY_BIT)
        return {Slot::Busy, nullptr, 0};
    uint64_t size = ((length & ~BPF_RINGBUF_DISCARD_BIT) + BPF_RINGBUF_HDR_SZ + 7) & ~uint64_t(7);
    if (length & BPF_RINGBUF_DISCARD_BIT)
        return {Slot::Discarded, nullptr, size};
    return {Slot::Committed, reinterpret_cast<const pt_record *>(header + BPF_RINGBUF_HDR_SZ),
            size};
}

void RingReader::release(uint64_t position)
{
    if (position == released_)
        return;
    released_ = position;
    __atomic_store_n(consumer_pos_, position, __ATOMIC_RELEASE);
}

} // namespace posixtrace
