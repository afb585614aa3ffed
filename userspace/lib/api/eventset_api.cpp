// C ABI of the posix_trace_eventset_* functions.
#include <trace.h>

#include <cerrno>
#include <cstring>

#include "events/event_set.hpp"
#include "util/export.hpp"

using namespace posixtrace;

POSIXTRACE_EXPORT int posix_trace_eventset_empty(trace_event_set_t *set)
{
    if (!set)
        return EINVAL;
    std::memset(set, 0, sizeof *set);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_eventset_fill(trace_event_set_t *set, int what)
{
    if (!set)
        return EINVAL;
    trace_event_set_t filled{};
    switch (what) {
    case POSIX_TRACE_ALL_EVENTS:
        std::memset(&filled, 0xff, sizeof filled);
        break;
    case POSIX_TRACE_SYSTEM_EVENTS:
        for (trace_event_id_t id = 0; id < POSIX_TRACE_TD_EVENT_COUNT; ++id)
            event_set_insert(filled, POSIX_TRACE_TD_EVENT_FIRST + id);
        for (trace_event_id_t id = POSIX_TRACE_PROCESS_FORK; id <= POSIX_TRACE_PROCESS_EXIT; ++id)
            event_set_insert(filled, id);
        [[fallthrough]];
    case POSIX_TRACE_WOPID_EVENTS:
        for (trace_event_id_t id = 0; id < POSIX_TRACE_SYSTEM_EVENT_COUNT; ++id)
            event_set_insert(filled, id);
        break;
    default:
        return EINVAL;
    }
    *set = filled;
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_eventset_add(trace_event_id_t id, trace_event_set_t *set)
{
    if (!set || !event_id_valid(id))
        return EINVAL;
    event_set_insert(*set, id);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_eventset_del(trace_event_id_t id, trace_event_set_t *set)
{
    if (!set || !event_id_valid(id))
        return EINVAL;
    event_set_erase(*set, id);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_eventset_ismember(trace_event_id_t id,
                                                    const trace_event_set_t *__restrict set,
                                                    int *__restrict ismember)
{
    if (!set || !ismember || !event_id_valid(id))
        return EINVAL;
    *ismember = event_set_contains(*set, id);
    return 0;
}
