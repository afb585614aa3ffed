#pragma once
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace posixtrace {

// Private anonymous pages that a child of fork finds zeroed
// (MADV_WIPEONFORK) at the same address: a call the fork interrupted (a
// signal handler that forked) finishes its writes there, harmlessly, and
// nothing of the parent's is shown to the child or changed by it.
class ForkWipedMemory {
public:
    // `bytes` rounded up to whole pages; `name` shows in /proc/PID/maps
    // where the kernel names anonymous memory.
    ForkWipedMemory(size_t bytes, const char *name)
    {
        size_t page = size_t(sysconf(_SC_PAGESIZE));
        bytes_ = (bytes + page - 1) / page * page;
        if (bytes_ == 0)
            return;
        void *area = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (area == MAP_FAILED)
            return;
        if (madvise(area, bytes_, MADV_WIPEONFORK) != 0) {
            munmap(area, bytes_);
            return;
        }
        prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, area, bytes_, name); // a name is a courtesy
        data_ = static_cast<uint8_t *>(area);
    }
    ~ForkWipedMemory()
    {
        if (data_)
            munmap(data_, bytes_);
    }
    ForkWipedMemory(const ForkWipedMemory &) = delete;
    ForkWipedMemory &operator=(const ForkWipedMemory &) = delete;

    bool valid() const { return data_ != nullptr; }
    uint8_t *data() const { return data_; }
    size_t bytes() const { return bytes_; }

private:
    size_t bytes_ = 0;
    uint8_t *data_ = nullptr;
};

} // namespace posixtrace
