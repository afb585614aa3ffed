#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <optional>
#include <string>

#include "attributes/attributes.hpp"
#include "attributes/trace_origin.hpp"
#include "events/event_destination.hpp"

namespace posixtrace {

enum class WaitMode { Block, Try, Until };

// What an active stream and a trace log opened for analysis both answer.
// The functions of <trace.h> that take either find it by its id and ask it
// through this, never which of the two it is.
class ReadableTrace {
public:
    virtual ~ReadableTrace() = default;

    virtual Attributes attributes() const = 0;
    // Where and when it was recorded; a log written before logs kept it
    // has none.
    virtual std::optional<TraceOrigin> origin() const = 0;
    // posix_trace_get_counters: a stream's now, a log's as its stream's
    // shutdown left them (none in a log without its trailer).
    virtual std::optional<posix_trace_counters> counters() = 0;
    // posix_trace_get_status. A stream's overrun status is cleared as it is
    // read; a log's is the one its stream ended with.
    virtual posix_trace_status_info report_status() = 0;
    // The next event in timestamp order: 0 with *unavailable set, or EINVAL,
    // ETIMEDOUT, EINTR. A log never waits (its events are there or it has
    // ended), and refuses WaitMode::Try (POSIX: trygetnext is for streams).
    virtual int next_event(const EventDestination &to, int *unavailable, WaitMode mode,
                           const timespec *abstime) = 0;
    virtual std::optional<std::string> event_name(trace_event_id_t id) const = 0;
    virtual void next_event_type(trace_event_id_t &id, int &unavailable) = 0;
    virtual void rewind_event_types() = 0;
};

} // namespace posixtrace
