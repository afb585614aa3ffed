#include "util/mirrored_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include "util/unique_fd.hpp"

namespace posixtrace {

MirroredMemory::MirroredMemory(size_t bytes, const char *name)
{
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    bytes_ = (bytes + page - 1) / page * page;
    UniqueFd memory(memfd_create(name, MFD_CLOEXEC));
    if (bytes_ == 0 || !memory || ftruncate(memory.get(), off_t(bytes_)) != 0)
        return;
    // Both halves reserved at once, then the same pages put in each.
    void *area = mmap(nullptr, 2 * bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return;
    auto *base = static_cast<uint8_t *>(area);
    for (uint8_t *half : {base, base + bytes_}) {
        if (mmap(half, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memory.get(), 0) ==
            MAP_FAILED) {
            munmap(area, 2 * bytes_);
            return;
        }
    }
    data_ = base;
}

MirroredMemory::~MirroredMemory()
{
    if (data_)
        munmap(data_, 2 * bytes_);
}

} // namespace posixtrace
