#pragma once
#include <trace.h>

#include <cstddef>

#include "posixtrace.h"

namespace posixtrace {

// Where one getnext call puts the event it reads.
struct EventDestination {
    posix_trace_event_info *info;
    void *data;
    size_t capacity;
    size_t *data_len;
};

// Fills `to` with a record and its payload, cut to what it has room for
// (POSIX_TRACE_TRUNCATED_READ); its stamp is taken as CLOCK_REALTIME.
void copy_event_out(const pt_record &record, const void *data, const EventDestination &to);

} // namespace posixtrace
