#pragma once
#include <cstddef>
#include <cstdint>

#include "posixtrace.h"

namespace posixtrace {

// One BPF ring buffer read in place through its mmapped pages: records are
// looked at by position (as the kernel's producer and consumer counters
// count bytes), so they can be merged across CPUs before they are copied,
// and the kernel gets their space back only when release() says so.
class RingReader {
public:
    RingReader(int ring_fd, size_t ring_bytes);
    ~RingReader();
    RingReader(RingReader &&other) noexcept;
    RingReader(const RingReader &) = delete;
    RingReader &operator=(const RingReader &) = delete;
    RingReader &operator=(RingReader &&) = delete;

    bool mapped() const { return data_ != nullptr; }

    // How far the kernel has reserved (acquire: the headers below it are
    // readable).
    uint64_t producer() const;
    // The consumer position this reader has published.
    uint64_t released() const { return released_; }

    enum class Slot { Committed, Discarded, Busy };
    struct Record {
        Slot slot;
        const pt_record *record; // when Committed
        uint64_t size;           // bytes to the next record (when not Busy)
    };
    // What is at `position`, which must be below producer().
    Record at(uint64_t position) const;

    // Gives the kernel back the space before `position`.
    void release(uint64_t position);

private:
    size_t ring_bytes_;
    size_t page_size_;
    uint64_t *consumer_pos_ = nullptr;       // shared, written by us
    const uint64_t *producer_pos_ = nullptr; // shared, written by the kernel
    const uint8_t *data_ = nullptr;          // ring data, mapped twice in a row
    uint64_t released_ = 0;
};

} // namespace posixtrace
