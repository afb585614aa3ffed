#pragma once
#include <cstddef>
#include <cstdint>

#include "posixtrace.h"

namespace posixtrace {

// Reads one BPF ring buffer in place through its mmapped pages, so records
// can be compared (merged across CPUs) before they are consumed and copied.
class RingReader {
public:
    RingReader(int ring_fd, size_t ring_bytes);
    ~RingReader();
    RingReader(RingReader &&other) noexcept;
    RingReader(const RingReader &) = delete;
    RingReader &operator=(const RingReader &) = delete;
    RingReader &operator=(RingReader &&) = delete;

    bool mapped() const { return data_ != nullptr; }
    // The oldest committed record, or nullptr: the ring is empty, or (*busy)
    // its oldest record is still being written.
    const pt_record *peek(bool *busy = nullptr);
    // Drops the record peek() returned.
    void advance();
    // Publishes what was consumed so the kernel can reuse the space.
    void commit();

private:
    size_t ring_bytes_;
    size_t page_size_;
    uint64_t *consumer_pos_ = nullptr;     // shared, written by us
    const uint64_t *producer_pos_ = nullptr; // shared, written by the kernel
    const uint8_t *data_ = nullptr;        // ring data, mapped twice in a row
    uint64_t position_ = 0;                 // our consumer position, not yet published
    uint64_t peeked_size_ = 0;
};

} // namespace posixtrace
