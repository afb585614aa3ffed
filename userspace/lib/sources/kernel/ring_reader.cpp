#include "sources/kernel/ring_reader.hpp"

#include <sys/mman.h>
#include <unistd.h>

namespace posixtrace {

RingReader::RingReader(int ring_fd, size_t ring_bytes)
    : ring_bytes_(ring_bytes), page_size_(size_t(sysconf(_SC_PAGESIZE)))
{
    void *consumer = mmap(nullptr, page_size_, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
    if (consumer == MAP_FAILED)
        return;
    // The producer page is followed by the data pages, mapped twice so a
    // record that wraps around the end reads as one contiguous block.
    void *producer = mmap(nullptr, page_size_ + 2 * ring_bytes, PROT_READ, MAP_SHARED, ring_fd,
                          off_t(page_size_));
    if (producer == MAP_FAILED) {
        munmap(consumer, page_size_);
        return;
    }
    consumer_page_ = consumer;
    producer_pages_ = producer;
    view(static_cast<uint64_t *>(consumer), static_cast<const uint64_t *>(producer),
         static_cast<const uint8_t *>(producer) + page_size_, ring_bytes);
    trust_namespace_ids();
}

RingReader::~RingReader()
{
    if (!consumer_page_)
        return;
    munmap(consumer_page_, page_size_);
    munmap(producer_pages_, page_size_ + 2 * ring_bytes_);
}

} // namespace posixtrace
