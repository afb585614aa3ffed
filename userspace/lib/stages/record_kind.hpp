#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>

#include "posixtrace.h"

namespace posixtrace {

// What a record leaving the merge is, decided once; each stage of the
// delivery looks at the kinds it is about.
enum class RecordKind {
    Lifecycle,    // fork, exec, exit, link-map change, a user event's name:
                  // the stream follows its processes by them
    UserEvent,    // posix_trace_event(), in the numbering of its process
    ThreadEvent,  // a TD_* event of a thread
    ThreadReport, // the kernel's report that it hid a thread's scheduler events
    Other,        // USDT events, the stream's own system events
};

inline RecordKind classify(const pt_record &record)
{
    uint32_t id = record.event_id;
    if (id == PT_EVENT_PROCESS_FORK || id == PT_EVENT_PROCESS_EXEC || id == PT_EVENT_PROCESS_EXIT ||
        id == PT_EVENT_LINK_MAP_CHANGED || id == PT_EVENT_USER_NAME)
        return RecordKind::Lifecycle;
    if (record.cpu == PT_CPU_SYSTEM) // made by the stream, not recorded
        return RecordKind::Other;
    if (id >= POSIX_TRACE_USER_EVENT_FIRST && id < POSIX_TRACE_USDT_EVENT_FIRST)
        return RecordKind::UserEvent;
    if (id >= POSIX_TRACE_TD_EVENT_FIRST &&
        id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT)
        return RecordKind::ThreadEvent;
    if (id == POSIX_TRACE_OVERFLOW)
        return RecordKind::ThreadReport;
    return RecordKind::Other;
}

} // namespace posixtrace
