#pragma once
#include <cstddef>

#include "stream/record_ring.hpp"

namespace posixtrace {

// One BPF ring buffer read in place through its mmapped pages: records are
// looked at by position, so they can be merged across CPUs before they are
// copied, and the kernel gets their space back only when release() says so.
class RingReader final : public RecordRing {
public:
    RingReader(int ring_fd, size_t ring_bytes);
    ~RingReader() override;

private:
    size_t ring_bytes_;
    size_t page_size_;
    void *consumer_page_ = nullptr;  // shared, written by us
    void *producer_pages_ = nullptr; // the producer page, then the data twice
};

} // namespace posixtrace
