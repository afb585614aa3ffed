#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstddef>
#include <iterator>

namespace posixtrace {

inline bool event_id_valid(trace_event_id_t id)
{
    return id < POSIX_TRACE_EVENT_ID_LIMIT;
}

inline bool event_set_contains(const trace_event_set_t &set, trace_event_id_t id)
{
    return event_id_valid(id) && (set.__bits[id / 64] >> (id % 64)) & 1;
}

inline void event_set_insert(trace_event_set_t &set, trace_event_id_t id)
{
    set.__bits[id / 64] |= uint64_t(1) << (id % 64);
}

inline void event_set_erase(trace_event_set_t &set, trace_event_id_t id)
{
    set.__bits[id / 64] &= ~(uint64_t(1) << (id % 64));
}

// posix_trace_set_filter's change of `current` by `set`, as `how` says;
// false, `current` unchanged, for an unknown `how`.
inline bool change_event_set(trace_event_set_t &current, const trace_event_set_t &set, int how)
{
    if (how != POSIX_TRACE_SET_EVENTSET && how != POSIX_TRACE_ADD_EVENTSET &&
        how != POSIX_TRACE_SUB_EVENTSET)
        return false;
    for (size_t i = 0; i < std::size(current.__bits); ++i) {
        if (how == POSIX_TRACE_SET_EVENTSET)
            current.__bits[i] = set.__bits[i];
        else if (how == POSIX_TRACE_ADD_EVENTSET)
            current.__bits[i] |= set.__bits[i];
        else
            current.__bits[i] &= ~set.__bits[i];
    }
    return true;
}

inline trace_event_set_t event_set_union(trace_event_set_t a, const trace_event_set_t &b)
{
    for (size_t i = 0; i < std::size(a.__bits); ++i)
        a.__bits[i] |= b.__bits[i];
    return a;
}

inline bool is_system_event(trace_event_id_t id)
{
    return id < POSIX_TRACE_SYSTEM_EVENT_COUNT;
}

inline bool is_thread_event(trace_event_id_t id)
{
    return id >= POSIX_TRACE_TD_EVENT_FIRST &&
           id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT;
}

} // namespace posixtrace
