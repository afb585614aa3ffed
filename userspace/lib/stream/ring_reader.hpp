#pragma once
#include <cstddef>
#include <cstdint>

#include "posixtrace.h"
#include "stream/record_ring.hpp"

namespace posixtrace {

// One BPF ring buffer read in place through its mmapped pages: records are
// looked at by position (as the kernel's producer and consumer counters
// count bytes), so they can be merged across CPUs before they are copied,
// and the kernel gets their space back only when release() says so.
class RingReader final : public RecordRing {
public:
    RingReader(int ring_fd, size_t ring_bytes);
    ~RingReader() override;
    RingReader(const RingReader &) = delete;
    RingReader &operator=(const RingReader &) = delete;

    bool mapped() const override { return data_ != nullptr; }
    uint64_t producer() const override;
    uint64_t released() const override { return released_; }
    Record at(uint64_t position) const override;
    void release(uint64_t position) override;

private:
    size_t ring_bytes_;
    size_t page_size_;
    uint64_t *consumer_pos_ = nullptr;       // shared, written by us
    const uint64_t *producer_pos_ = nullptr; // shared, written by the kernel
    const uint8_t *data_ = nullptr;          // ring data, mapped twice in a row
    uint64_t released_ = 0;
};

} // namespace posixtrace
