#pragma once
#include <unistd.h>

#include <cstdint>

namespace posixtrace {

// An eventfd used as a flag across threads (opened EFD_NONBLOCK): raised
// by adding one, lowered by reading it to zero.
inline void raise_event_fd(int fd)
{
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd, &one, sizeof one);
}

inline void lower_event_fd(int fd)
{
    uint64_t value;
    while (read(fd, &value, sizeof value) == sizeof value) {
    }
}

} // namespace posixtrace
