#pragma once
#include <trace.h>

#include <cstddef>

#include "posixtrace.h"

namespace posixtrace {

// The ids an event's thread has in its own PID namespace, where that is
// not the first one (posix_trace_event_namespace_ids).
struct EventNamespaceIds {
    bool known = false;
    pt_namespace_ids ids{};
};

// Where one getnext call puts the event it reads.
struct EventDestination {
    posix_trace_event_info *info;
    void *data;
    size_t capacity;
    size_t *data_len;
    EventNamespaceIds *namespace_ids = nullptr; // filled too, when not null
};

// Fills `to` with a record of the store, its payload cut to what `to` has
// room for (POSIX_TRACE_TRUNCATED_READ) and its namespace ids, stamped
// `realtime_ns` (the stores keep the record's own stamp apart from its
// header, which they do not copy).
void copy_event_out(const pt_record &record, uint64_t realtime_ns, const void *data,
                    const EventDestination &to);

} // namespace posixtrace
