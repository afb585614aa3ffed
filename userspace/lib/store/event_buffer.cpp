#include "store/event_buffer.hpp"

#include <sys/mman.h>

#include <cstring>

#include "attributes/attributes.hpp"

namespace posixtrace {
namespace {
struct Frame {
    uint32_t bytes;  // whole frame: this header, the record, padding
    uint32_t filler; // nonzero: no record, the rest of the memory up to its end
};
static_assert(sizeof(Frame) == PT_RING_HEADER_SIZE);
static_assert(sizeof(pt_record) == PT_RECORD_HEADER_SIZE);

// The largest record, and so the largest filler.
const size_t kLargestFrame = stored_event_size(PT_DATA_SIZE_LIMIT);
} // namespace

// The live records cross the end of the memory at most once, so they sit
// behind at most one filler, smaller than the largest record. Room for two:
// when a new filler would end a lap while the last lap's is still live, the
// records alone then hold more than the stream's size, so fits() refuses
// only what the size refuses too.
EventBuffer::EventBuffer(size_t capacity)
    : capacity_(capacity), memory_(capacity + 2 * kLargestFrame, "posixtrace-stream")
{
    if (memory_.valid())
        madvise(memory_.data(), memory_.bytes(), MADV_HUGEPAGE);
}

size_t EventBuffer::room_before_end() const
{
    return memory_.bytes() - tail_at_;
}

void EventBuffer::advance(uint64_t &position, size_t &at, size_t bytes) const
{
    position += bytes;
    at += bytes;
    if (at >= memory_.bytes())
        at -= memory_.bytes();
}

bool EventBuffer::fits(size_t bytes) const
{
    if (used_ + bytes > capacity_)
        return false;
    size_t filler = bytes > room_before_end() ? room_before_end() : 0;
    return (tail_ - head_) + filler + bytes <= memory_.bytes();
}

void EventBuffer::push(const pt_record &header, const void *data)
{
    size_t bytes = stored_event_size(header.data_len);
    if (bytes > room_before_end()) {
        Frame filler{uint32_t(room_before_end()), 1};
        std::memcpy(memory_.data() + tail_at_, &filler, sizeof filler);
        if (head_ == tail_)
            advance(head_, head_at_, filler.bytes);
        advance(tail_, tail_at_, filler.bytes);
    }
    uint8_t *at = memory_.data() + tail_at_;
    Frame frame{uint32_t(bytes), 0};
    std::memcpy(at, &frame, sizeof frame);
    std::memcpy(at + sizeof frame, &header, sizeof header);
    if (header.data_len)
        std::memcpy(at + sizeof frame + sizeof header, data, header.data_len);
    advance(tail_, tail_at_, bytes);
    used_ += bytes;
}

const pt_record &EventBuffer::front() const
{
    return *reinterpret_cast<const pt_record *>(memory_.data() + head_at_ + sizeof(Frame));
}

void EventBuffer::skip_filler()
{
    if (head_ == tail_)
        return;
    Frame frame;
    std::memcpy(&frame, memory_.data() + head_at_, sizeof frame);
    if (frame.filler)
        advance(head_, head_at_, frame.bytes);
}

void EventBuffer::pop()
{
    Frame frame;
    std::memcpy(&frame, memory_.data() + head_at_, sizeof frame);
    advance(head_, head_at_, frame.bytes);
    used_ -= frame.bytes;
    skip_filler();
    if (empty())
        rewind();
}

void EventBuffer::clear()
{
    head_ = tail_;
    used_ = 0;
    rewind();
}

// An empty buffer starts again at the beginning of its memory: a reader that
// keeps up then reuses the same few pages, warm in the cache, instead of
// walking (and making the kernel zero) every page of a large stream.
void EventBuffer::rewind()
{
    head_at_ = tail_at_ = 0;
}

} // namespace posixtrace
