#pragma once
#include <trace.h>

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace posixtrace {

// Names of the event types the implementation defines (system, thread,
// unnamed user event); nullopt for any other id.
std::optional<std::string_view> builtin_event_name(trace_event_id_t id);
// The builtin ids in increasing order.
const std::vector<trace_event_id_t> &builtin_event_ids();

// The user event names of this process (posix_trace_eventid_open): ids are
// given in order of registration and never change.
class UserEventRegistry {
public:
    static UserEventRegistry &instance();

    // 0 and the id; ENAMETOOLONG; the unnamed user event once full.
    int open(std::string_view name, trace_event_id_t &id);
    std::optional<std::string> name_of(trace_event_id_t id) const;
    std::vector<trace_event_id_t> ids() const;

private:
    mutable std::mutex mutex_;
    std::vector<std::string> names_;
    std::unordered_map<std::string, trace_event_id_t> ids_;
};

} // namespace posixtrace
