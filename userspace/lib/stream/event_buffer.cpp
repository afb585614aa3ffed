#include "stream/event_buffer.hpp"

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

EventBuffer::EventBuffer(size_t capacity)
    : capacity_(capacity), memory_(capacity, "posixtrace-stream")
{
}

void EventBuffer::push(const pt_record &header, const void *data)
{
    size_t bytes = stored_event_size(header.data_len);
    uint8_t *at = memory_.data() + tail_ % memory_.bytes();
    Frame frame{uint32_t(bytes), 0};
    std::memcpy(at, &frame, sizeof frame);
    std::memcpy(at + sizeof frame, &header, sizeof header);
    if (header.data_len)
        std::memcpy(at + sizeof frame + sizeof header, data, header.data_len);
    tail_ += bytes;
}

const pt_record &EventBuffer::front() const
{
    return *reinterpret_cast<const pt_record *>(memory_.data() + head_ % memory_.bytes() +
                                                sizeof(Frame));
}

void EventBuffer::pop()
{
    Frame frame;
    std::memcpy(&frame, memory_.data() + head_ % memory_.bytes(), sizeof frame);
    head_ += frame.bytes;
}

} // namespace posixtrace
