#include "events/event_destination.hpp"

#include <pthread.h>

#include <cstring>

#include "events/namespace_ids.hpp"
#include "util/clock.hpp"

namespace posixtrace {

void copy_event_out(const pt_record &record, uint64_t realtime_ns, const void *data,
                    const EventDestination &to)
{
    posix_trace_event_info &info = *to.info;
    info = {};
    info.posix_event_id = record.event_id;
    info.posix_pid = pid_t(record.pid);
    info.posix_prog_address = reinterpret_cast<void *>(record.prog_address);
    info.posix_thread_id = pthread_t(record.thread_id);
    info.posix_timestamp = to_timespec(realtime_ns);
    info.posix_tid = pid_t(record.tid);
    info.posix_truncation_status = record.flags & PT_RECORD_TRUNCATED ? POSIX_TRACE_TRUNCATED_RECORD
                                                                      : POSIX_TRACE_NOT_TRUNCATED;
    size_t length = record.data_len;
    if (to.capacity < length) {
        length = to.capacity;
        info.posix_truncation_status = POSIX_TRACE_TRUNCATED_READ;
    }
    if (length && to.data)
        std::memcpy(to.data, data, length);
    *to.data_len = to.data ? length : 0;
    if (to.namespace_ids) {
        std::optional<pt_namespace_ids> ids = namespace_ids_of(record, data);
        *to.namespace_ids = {ids.has_value(), ids.value_or(pt_namespace_ids{})};
    }
}

} // namespace posixtrace
