#include "stream/stream_event_types.hpp"

#include <posix_trace/events.h>

#include <algorithm>

#include "events/event_names.hpp"

namespace posixtrace {

std::optional<std::string> StreamEventTypes::name_of(trace_event_id_t id) const
{
    if (auto builtin = builtin_event_name(id))
        return std::string(*builtin);
    if (id >= POSIX_TRACE_USDT_EVENT_FIRST) {
        const ProbeAttacher *probes = recording_.probes();
        return probes ? probes->usdt_name(id) : std::nullopt;
    }
    return user_events_.name_of(id);
}

// The trace system's ids come first, then the user events', then the
// probes'.
std::vector<trace_event_id_t> StreamEventTypes::ids() const
{
    std::vector<trace_event_id_t> ids = builtin_event_ids();
    std::vector<trace_event_id_t> user = user_events_.ids();
    ids.insert(ids.end(), user.begin(), user.end());
    const ProbeAttacher *probes = recording_.probes();
    for (size_t i = 0; probes && i < probes->usdt_type_count(); ++i)
        ids.push_back(POSIX_TRACE_USDT_EVENT_FIRST + trace_event_id_t(i));
    return ids;
}

std::vector<log::NamedType> StreamEventTypes::named() const
{
    std::vector<log::NamedType> types;
    for (trace_event_id_t id : ids())
        if (auto name = name_of(id))
            types.push_back({id, *name});
    return types;
}

void StreamEventTypes::next(trace_event_id_t &id, int &unavailable)
{
    std::vector<trace_event_id_t> all = ids();
    auto next = cursor_ ? std::upper_bound(all.begin(), all.end(), *cursor_) : all.begin();
    if (next == all.end()) {
        unavailable = 1;
        return;
    }
    id = *next;
    cursor_ = id;
    unavailable = 0;
}

} // namespace posixtrace
