#include "stream/local_ring.hpp"

#include <linux/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/unique_fd.hpp"

namespace posixtrace {
namespace {

uint64_t record_span(uint32_t length)
{
    return (uint64_t(length) + BPF_RINGBUF_HDR_SZ + 7) & ~uint64_t(7);
}

std::atomic_ref<uint32_t> header_at(uint8_t *data, size_t bytes, uint64_t position)
{
    return std::atomic_ref<uint32_t>(
        *reinterpret_cast<uint32_t *>(data + (position & (bytes - 1))));
}

} // namespace

LocalRing::LocalRing(size_t bytes) : bytes_(bytes)
{
    if (bytes == 0 || (bytes & (bytes - 1)) || bytes % size_t(sysconf(_SC_PAGESIZE)))
        return;
    UniqueFd memory(memfd_create("posixtrace-lane", MFD_CLOEXEC));
    if (!memory || ftruncate(memory.get(), off_t(bytes)) != 0)
        return;
    // Reserve both halves at once, then put the same pages in each.
    void *area = mmap(nullptr, 2 * bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return;
    auto *base = static_cast<uint8_t *>(area);
    for (uint8_t *half : {base, base + bytes}) {
        if (mmap(half, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memory.get(), 0) ==
            MAP_FAILED) {
            munmap(area, 2 * bytes);
            return;
        }
    }
    if (madvise(area, 2 * bytes, MADV_DONTFORK) != 0) {
        munmap(area, 2 * bytes);
        return;
    }
    data_ = base;
}

LocalRing::~LocalRing()
{
    if (data_)
        munmap(data_, 2 * bytes_);
}

RecordRing::Record LocalRing::at(uint64_t position) const
{
    uint32_t length = header_at(data_, bytes_, position).load(std::memory_order_acquire);
    if (length & BPF_RINGBUF_BUSY_BIT)
        return {Slot::Busy, nullptr, 0};
    if (length & BPF_RINGBUF_DISCARD_BIT)
        return {Slot::Discarded, nullptr, record_span(length & ~BPF_RINGBUF_DISCARD_BIT)};
    const uint8_t *record = data_ + (position & (bytes_ - 1)) + BPF_RINGBUF_HDR_SZ;
    return {Slot::Committed, reinterpret_cast<const pt_record *>(record), record_span(length)};
}

void LocalRing::release(uint64_t position)
{
    consumer_.store(position, std::memory_order_release);
}

pt_record *LocalRing::reserve(uint32_t data_len)
{
    uint32_t length = uint32_t(sizeof(pt_record)) + data_len;
    uint64_t span = record_span(length);
    uint64_t position = producer_.load(std::memory_order_relaxed); // ours alone
    if (!data_ || data_len > bytes_ ||
        position + span - consumer_.load(std::memory_order_acquire) > bytes_) {
        lost_.store(lost_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
    }
    // Busy first, then the producer past it: a reader that sees the new
    // producer position sees a busy header, never the bytes of an old one.
    header_at(data_, bytes_, position)
        .store(length | BPF_RINGBUF_BUSY_BIT, std::memory_order_relaxed);
    producer_.store(position + span, std::memory_order_release);
    return reinterpret_cast<pt_record *>(data_ + (position & (bytes_ - 1)) + BPF_RINGBUF_HDR_SZ);
}

void LocalRing::commit(pt_record *record)
{
    auto *header = reinterpret_cast<uint8_t *>(record) - BPF_RINGBUF_HDR_SZ;
    std::atomic_ref<uint32_t> length(*reinterpret_cast<uint32_t *>(header));
    length.store(length.load(std::memory_order_relaxed) & ~BPF_RINGBUF_BUSY_BIT,
                 std::memory_order_release);
}

} // namespace posixtrace
