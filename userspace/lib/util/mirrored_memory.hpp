#pragma once
#include <cstddef>
#include <cstdint>

namespace posixtrace {

// Memory mapped twice back to back (a memfd's pages, then the same pages
// again), so a record that runs past the end continues, contiguous, at the
// start: the kernel maps its ring buffers so, and the stream's buffer is
// mapped so too. A child of fork shares the pages.
class MirroredMemory {
public:
    // `bytes` rounded up to whole pages; `name` shows in /proc/PID/maps.
    MirroredMemory(size_t bytes, const char *name);
    ~MirroredMemory();
    MirroredMemory(const MirroredMemory &) = delete;
    MirroredMemory &operator=(const MirroredMemory &) = delete;

    bool valid() const { return data_ != nullptr; }
    uint8_t *data() const { return data_; }
    size_t bytes() const { return bytes_; } // one copy
private:
    size_t bytes_;
    uint8_t *data_ = nullptr;
};

} // namespace posixtrace
