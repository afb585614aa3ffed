#pragma once
#include <cstddef>
#include <cstdint>

#include "posixtrace.h"
#include "util/mirrored_memory.hpp"

namespace posixtrace {

// The stream's event storage: a circular byte buffer of exactly the
// stream-min-size the attributes ask for. Events are stored as records
// (header + payload) framed like the kernel's rings, so an event costs the
// same bytes here as there (see stored_event_size). The memory is mapped
// twice back to back, so every record is contiguous even across the wrap.
class EventBuffer {
public:
    explicit EventBuffer(size_t capacity);

    bool valid() const { return memory_.valid(); }
    size_t used() const { return size_t(tail_ - head_); }
    bool empty() const { return head_ == tail_; }
    bool fits(size_t bytes) const { return used() + bytes <= capacity_; }

    // Appends a record; the caller has made room (fits()).
    void push(const pt_record &header, const void *data);
    const pt_record &front() const;
    void pop();
    void clear() { head_ = tail_; }

private:
    size_t capacity_;
    MirroredMemory memory_;
    uint64_t head_ = 0;
    uint64_t tail_ = 0;
};

} // namespace posixtrace
