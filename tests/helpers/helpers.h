/* What the helper programs share. */
#ifndef POSIXTRACE_TEST_HELPERS_H
#define POSIXTRACE_TEST_HELPERS_H

#include <posix_trace/events.h>
#include <trace.h>

/* Keeps the thread events (which depend on scheduling) out of a stream. */
static inline int filter_thread_events(trace_id_t trid)
{
    trace_event_set_t thread_events;
    posix_trace_eventset_empty(&thread_events);
    for (trace_event_id_t id = POSIX_TRACE_TD_EVENT_FIRST;
         id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT; ++id)
        posix_trace_eventset_add(id, &thread_events);
    return posix_trace_set_filter(trid, &thread_events, POSIX_TRACE_SET_EVENTSET);
}

#endif
