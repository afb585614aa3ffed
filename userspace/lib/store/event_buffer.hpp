#pragma once
#include <cstddef>
#include <cstdint>

#include "posixtrace.h"
#include "util/fork_wiped_memory.hpp"

namespace posixtrace {

// The stream's event storage: a circular byte buffer of exactly the
// stream-min-size the attributes ask for. Events are stored as records
// (header + payload) framed like the kernel's rings, so an event costs the
// same bytes here as there (see stored_event_size). A record is never
// split: one that would run past the end starts again at the beginning,
// behind a filler that the size asked for does not count (the memory has
// room for the largest filler besides). Its pages are taken as they are
// first written (an empty buffer starts again at its first page), in huge pages where the system
// has them, and a child of fork sees them zeroed, not shared, nor copied on the parent's writes.
class EventBuffer {
public:
    explicit EventBuffer(size_t capacity);

    bool valid() const { return memory_.valid(); }
    size_t used() const { return used_; }
    bool empty() const { return head_ == tail_; }
    bool fits(size_t bytes) const;

    // Appends a record; the caller has made room (fits()).
    void push(const pt_record &header, const void *data);
    const pt_record &front() const;
    void pop();
    void clear();

private:
    size_t room_before_end() const;
    void skip_filler();
    void rewind();
    void advance(uint64_t &position, size_t &at, size_t bytes) const;

    size_t capacity_;
    ForkWipedMemory memory_;
    uint64_t head_ = 0; // positions, growing
    uint64_t tail_ = 0;
    size_t head_at_ = 0; // the same, as offsets in the memory
    size_t tail_at_ = 0;
    size_t used_ = 0; // the records' bytes, without the filler
};

} // namespace posixtrace
