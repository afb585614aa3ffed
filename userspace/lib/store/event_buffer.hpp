#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "posixtrace.h"
#include "util/fork_wiped_memory.hpp"

namespace posixtrace {

// The stream's event storage: records (header + payload, framed like the
// kernel's rings, so an event costs the same bytes here as there: see
// stored_event_size) in the order pushed, holding at most the
// stream-min-size the attributes ask for. The memory is cut in chunks; a
// record is never split, and the end of a chunk a record did not fit in
// is not counted against the size (the memory has chunks enough for it).
// A chunk read to its end is the next one written, so a reader that keeps
// up, even behind by a backlog, works in the same pages, warm in the cache,
// instead of walking (and making the kernel zero) every page of a large
// stream; an emptied buffer starts again at the start of its chunk. Pages
// are taken as first written, in huge pages where the system has them, and
// a child of fork sees them zeroed, not shared, nor copied on the parent's
// writes.
class EventBuffer {
public:
    explicit EventBuffer(size_t capacity);

    bool valid() const { return memory_.valid(); }
    size_t used() const { return used_; }
    size_t capacity() const { return capacity_; }
    bool empty() const { return used_ == 0; }
    bool fits(size_t bytes) const;

    // Appends a record, flagged as holding `namespace_ids` after its data
    // when there are some (PT_RECORD_NAMESPACE_IDS, whatever `header`
    // says); the caller has made room (fits() of stored_event_size() of
    // record_payload_bytes()).
    void push(const pt_record &header, const void *data,
              const pt_namespace_ids *namespace_ids = nullptr);
    const pt_record &front() const;
    void pop();
    void clear();

private:
    uint8_t *chunk(uint32_t index) const { return memory_.data() + size_t(index) * kChunkBytes; }
    void next_tail_chunk();
    void release_head_chunk();

    static constexpr size_t kChunkBytes = 256 * 1024;

    size_t capacity_;
    ForkWipedMemory memory_;
    std::vector<uint32_t> free_;  // chunks not in use, the latest let go on top
    std::deque<uint32_t> in_use_; // the head's chunk first, the tail's last
    size_t head_at_ = 0;          // offset of the oldest record in in_use_.front()
    size_t tail_at_ = 0;          // offset of the next record in in_use_.back()
    size_t used_ = 0;             // the records' bytes
};

} // namespace posixtrace
