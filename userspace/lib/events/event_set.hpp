#pragma once
#include <posix_trace/events.h>
#include <trace.h>

namespace posixtrace {

inline bool event_id_valid(trace_event_id_t id) { return id < POSIX_TRACE_EVENT_ID_LIMIT; }

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

inline bool is_system_event(trace_event_id_t id) { return id < POSIX_TRACE_SYSTEM_EVENT_COUNT; }

inline bool is_thread_event(trace_event_id_t id)
{
    return id >= POSIX_TRACE_TD_EVENT_FIRST &&
           id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT;
}

} // namespace posixtrace
