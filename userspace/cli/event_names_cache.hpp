#pragma once
#include <trace.h>

#include <map>
#include <string>

namespace posixtrace::cli {

// The names of a stream's (or a trace log's) event types, asked of the
// library once per type: commands print a name for every event.
class EventNames {
public:
    explicit EventNames(trace_id_t trid) : trid_(trid) {}
    // The type's name; "user#ID" for a type the library cannot name (a user
    // event registered by the traced process that the stream has not seen).
    const std::string &of(trace_event_id_t id);

private:
    trace_id_t trid_;
    std::map<trace_event_id_t, std::string> names_;
};

} // namespace posixtrace::cli
