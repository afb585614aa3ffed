#include "store/event_buffer.hpp"

#include <sys/mman.h>

#include <cstring>

#include "attributes/attributes.hpp"
#include "events/namespace_ids.hpp"

namespace posixtrace {
namespace {
struct Frame {
    uint32_t bytes;  // whole frame: this header, the record, padding
    uint32_t filler; // nonzero: no record, the rest of the chunk
};
static_assert(sizeof(Frame) == PT_RING_HEADER_SIZE);
static_assert(sizeof(pt_record) == PT_RECORD_HEADER_SIZE);

// The largest record, and so the most a chunk leaves unused at its end.
const size_t kLargestFrame = stored_event_size(record_payload_bytes(PT_DATA_SIZE_LIMIT, true));
} // namespace

// Every chunk but the head's and the tail's holds more than a chunk less
// the largest record, so records of `capacity` bytes never need more than
// capacity / (chunk - largest) of those, the head's and the tail's, and one
// to move on to.
EventBuffer::EventBuffer(size_t capacity)
    : capacity_(capacity),
      memory_((capacity / (kChunkBytes - kLargestFrame) + 3) * kChunkBytes, "posixtrace-stream")
{
    static_assert(kChunkBytes % PT_RING_HEADER_SIZE == 0);
    if (!memory_.valid())
        return;
    madvise(memory_.data(), memory_.bytes(), MADV_HUGEPAGE);
    uint32_t chunks = uint32_t(memory_.bytes() / kChunkBytes);
    for (uint32_t index = chunks; index-- > 1;)
        free_.push_back(index); // chunk 1 on top: taken first, after chunk 0
    in_use_.push_back(0);
}

bool EventBuffer::fits(size_t bytes) const
{
    if (used_ + bytes > capacity_ || bytes > kChunkBytes)
        return false;
    return kChunkBytes - tail_at_ >= bytes || !free_.empty();
}

// The tail's chunk is left with a filler over what the record did not fit in.
void EventBuffer::next_tail_chunk()
{
    if (tail_at_ < kChunkBytes) {
        Frame filler{uint32_t(kChunkBytes - tail_at_), 1};
        std::memcpy(chunk(in_use_.back()) + tail_at_, &filler, sizeof filler);
    }
    in_use_.push_back(free_.back());
    free_.pop_back();
    tail_at_ = 0;
}

void EventBuffer::push(const pt_record &header, const void *data,
                       const pt_namespace_ids *namespace_ids)
{
    size_t bytes = stored_event_size(record_payload_bytes(header.data_len, namespace_ids));
    if (kChunkBytes - tail_at_ < bytes)
        next_tail_chunk();
    uint8_t *at = chunk(in_use_.back()) + tail_at_;
    Frame frame{uint32_t(bytes), 0};
    std::memcpy(at, &frame, sizeof frame);
    pt_record stored = header;
    stored.flags = namespace_ids ? stored.flags | PT_RECORD_NAMESPACE_IDS
                                 : stored.flags & ~PT_RECORD_NAMESPACE_IDS;
    std::memcpy(at + sizeof frame, &stored, sizeof stored);
    uint8_t *payload = at + sizeof frame + sizeof stored;
    if (header.data_len)
        std::memcpy(payload, data, header.data_len);
    if (namespace_ids) {
        size_t ids_at = namespace_ids_offset(header.data_len);
        std::memset(payload + header.data_len, 0, ids_at - header.data_len);
        std::memcpy(payload + ids_at, namespace_ids, sizeof *namespace_ids);
    }
    tail_at_ += bytes;
    used_ += bytes;
}

const pt_record &EventBuffer::front() const
{
    return *reinterpret_cast<const pt_record *>(chunk(in_use_.front()) + head_at_ + sizeof(Frame));
}

void EventBuffer::release_head_chunk()
{
    free_.push_back(in_use_.front());
    in_use_.pop_front();
    head_at_ = 0;
}

void EventBuffer::pop()
{
    Frame frame;
    std::memcpy(&frame, chunk(in_use_.front()) + head_at_, sizeof frame);
    head_at_ += frame.bytes;
    used_ -= frame.bytes;
    if (in_use_.size() == 1) {
        if (head_at_ == tail_at_)
            head_at_ = tail_at_ = 0; // emptied: the same chunk again, from its start
        return;
    }
    if (head_at_ < kChunkBytes) {
        std::memcpy(&frame, chunk(in_use_.front()) + head_at_, sizeof frame);
        if (!frame.filler)
            return;
    }
    release_head_chunk(); // the next holds a record still: the tail's got one when taken
}

void EventBuffer::clear()
{
    while (in_use_.size() > 1)
        release_head_chunk();
    head_at_ = tail_at_ = 0;
    used_ = 0;
}

} // namespace posixtrace
