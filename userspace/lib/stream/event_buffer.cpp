#include "stream/event_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "attributes/attributes.hpp"

namespace posixtrace {
namespace {
struct Frame {
    uint32_t bytes; // whole frame: this header, the record, padding
    uint32_t reserved;
};
static_assert(sizeof(Frame) == PT_RING_HEADER_SIZE);
static_assert(sizeof(pt_record) == PT_RECORD_HEADER_SIZE);
} // namespace

EventBuffer::EventBuffer(size_t capacity) : capacity_(capacity)
{
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    mapped_bytes_ = (capacity + page - 1) / page * page;
    UniqueFd memory(memfd_create("posixtrace-stream", MFD_CLOEXEC));
    if (!memory || ftruncate(memory.get(), off_t(mapped_bytes_)) != 0)
        return;
    void *area = mmap(nullptr, 2 * mapped_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return;
    auto *bytes = static_cast<uint8_t *>(area);
    for (int copy = 0; copy < 2; ++copy) {
        if (mmap(bytes + copy * mapped_bytes_, mapped_bytes_, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, memory.get(), 0) == MAP_FAILED) {
            munmap(area, 2 * mapped_bytes_);
            return;
        }
    }
    base_ = bytes;
}

EventBuffer::~EventBuffer()
{
    if (base_)
        munmap(base_, 2 * mapped_bytes_);
}

void EventBuffer::push(const pt_record &header, const void *data)
{
    size_t bytes = stored_event_size(header.data_len);
    uint8_t *at = base_ + tail_ % mapped_bytes_;
    Frame frame{uint32_t(bytes), 0};
    std::memcpy(at, &frame, sizeof frame);
    std::memcpy(at + sizeof frame, &header, sizeof header);
    if (header.data_len)
        std::memcpy(at + sizeof frame + sizeof header, data, header.data_len);
    tail_ += bytes;
}

const pt_record &EventBuffer::front() const
{
    return *reinterpret_cast<const pt_record *>(base_ + head_ % mapped_bytes_ + sizeof(Frame));
}

void EventBuffer::pop()
{
    Frame frame;
    std::memcpy(&frame, base_ + head_ % mapped_bytes_, sizeof frame);
    head_ += frame.bytes;
}

} // namespace posixtrace
