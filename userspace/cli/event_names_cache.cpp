#include "event_names_cache.hpp"

#include <utility>

namespace posixtrace::cli {

const std::string &EventNames::of(trace_event_id_t id)
{
    auto found = names_.find(id);
    if (found != names_.end())
        return found->second;
    char name[TRACE_EVENT_NAME_MAX];
    std::string text =
        posix_trace_eventid_get_name(trid_, id, name) == 0 ? name : "user#" + std::to_string(id);
    return names_.emplace(id, std::move(text)).first->second;
}

} // namespace posixtrace::cli
