#pragma once
#include <trace.h>

#include <optional>
#include <string>
#include <vector>

#include "events/stream_user_events.hpp"
#include "log/log_format.hpp"
#include "stream/recording.hpp"

namespace posixtrace {

// The event types a stream knows: the trace system's own, the user event
// types of the processes it traces, and one type for each PROVIDER:NAME of
// the USDT probes its recording attached; with the cursor that
// posix_trace_get_next_event_type moves. The probes go at shutdown, and
// their names with them.
class StreamEventTypes {
public:
    StreamEventTypes(StreamUserEvents &user_events, const Recording &recording)
        : user_events_(user_events), recording_(recording)
    {
    }

    std::optional<std::string> name_of(trace_event_id_t id) const;
    // Every type with a name, in the order of their ids (a log's table).
    std::vector<log::NamedType> named() const;
    // posix_trace_trid_eventid_open: 0, or ENAMETOOLONG.
    int open(const char *name, trace_event_id_t &id) { return user_events_.open(name, id); }
    // The type after the one returned last, or `unavailable`.
    void next(trace_event_id_t &id, int &unavailable);
    void rewind() { cursor_.reset(); }

private:
    std::vector<trace_event_id_t> ids() const; // ascending

    StreamUserEvents &user_events_;
    const Recording &recording_;
    std::optional<trace_event_id_t> cursor_;
};

} // namespace posixtrace
