#pragma once
#include <optional>

#include "events/stream_user_events.hpp"
#include "posixtrace.h"
#include "stages/filter_history.hpp"

namespace posixtrace {

// A user event reaches the stream in the numbering of the image that
// recorded it; the stream's numbering is its first image's. The kernel
// judged the event by its own id, so one the stream numbers anew (an
// exec'd image's) is checked against the filter in force at its stamp.
class UserIdTranslation {
public:
    UserIdTranslation(StreamUserEvents &user_events, const FilterHistory &filters)
        : user_events_(user_events), filters_(filters)
    {
    }
    // The event's id in the stream; nullopt when, renumbered, it was
    // filtered at its stamp.
    std::optional<trace_event_id_t> stream_id(const pt_record &record)
    {
        trace_event_id_t id = stream_id_of(record);
        if (id != record.event_id && filters_.filtered_at(id, record.timestamp_ns))
            return std::nullopt;
        return id;
    }
    // Whether the stream keeps the record's id as it is.
    bool keeps_id(const pt_record &record) { return stream_id_of(record) == record.event_id; }

private:
    trace_event_id_t stream_id_of(const pt_record &record)
    {
        return user_events_.stream_id(pid_t(record.pid), record.image, record.event_id);
    }

    StreamUserEvents &user_events_;
    const FilterHistory &filters_;
};

} // namespace posixtrace
