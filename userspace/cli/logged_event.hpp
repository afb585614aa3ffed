#pragma once
// What the log-reading commands (dump, export) pass around: one event read
// from a trace log, and what the log says about itself. Plain data, so the
// export writers can be fed events that come from anywhere (tests do).
#include <posix_trace/events.h>
#include <trace.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>

namespace posixtrace::cli {

// One event, valid until the next one is read.
struct LoggedEvent {
    const posix_trace_event_info &info;
    const std::string &name; // the event type's name
    const unsigned char *data;
    size_t length;
    // Its thread's ids in its own PID namespace, where that is not the
    // host's (posix_trace_event_namespace_ids); nullptr otherwise.
    const posix_trace_namespace_ids *namespace_ids = nullptr;
};

// The log's attributes (posix_trace_get_attr), for the exported files' headers.
struct LogDescription {
    std::string trace_name;
    std::string generation_version; // the writer, e.g. "posixtrace 0.1.0"
    timespec creation_time{};
    long clock_resolution_ns = 1;
    std::optional<posix_trace_origin> origin; // none in a log of an older writer
};

inline uint64_t timestamp_ns(const posix_trace_event_info &info)
{
    return uint64_t(info.posix_timestamp.tv_sec) * 1'000'000'000u +
           uint64_t(info.posix_timestamp.tv_nsec);
}

} // namespace posixtrace::cli
