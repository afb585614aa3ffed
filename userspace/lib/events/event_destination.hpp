#pragma once
#include <trace.h>

#include <cstddef>

namespace posixtrace {

// Where one getnext call puts the event it reads.
struct EventDestination {
    posix_trace_event_info *info;
    void *data;
    size_t capacity;
    size_t *data_len;
};

} // namespace posixtrace
