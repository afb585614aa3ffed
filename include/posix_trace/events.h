/* posix_trace/events.h -- extension: the event type id layout and the data
 * carried by the system trace events of libposixtrace.
 */
#ifndef POSIXTRACE_EVENTS_H
#define POSIXTRACE_EVENTS_H

#include <stdint.h>
#include <trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Event type ids (trace_event_id_t):
 *   0 .. 7                 POSIX system events (POSIX_TRACE_START ... FLUSH_STOP)
 *   16 .. 29               thread events td_ready ... td_timeout
 *   31                     posix_trace_unnamed_userevent
 *   32 .. 32+TRACE_USER_EVENT_MAX-1   user events, in order of registration
 *   2048 .. 8191           USDT probes of the traced process, per stream
 * All ids are below POSIX_TRACE_EVENT_ID_LIMIT. */
#define POSIX_TRACE_SYSTEM_EVENT_COUNT 8
#define POSIX_TRACE_TD_EVENT_FIRST 16u
#define POSIX_TRACE_TD_EVENT_COUNT 14u
#define POSIX_TRACE_USER_EVENT_FIRST 32u
#define POSIX_TRACE_USDT_EVENT_FIRST 2048u

/* Data of a posix_trace_stop event: why the stream stopped. */
enum posix_trace_stop_cause {
    POSIX_TRACE_STOP_BY_CALL = 0,   /* posix_trace_stop() or shutdown */
    POSIX_TRACE_STOP_STREAM_FULL = 1 /* POSIX_TRACE_UNTIL_FULL stream became full */
};
struct posix_trace_stop_data {
    uint32_t cause; /* enum posix_trace_stop_cause */
};

/* Data of a posix_trace_overflow event: exactly how many events were lost
 * since the previous overflow event, and where. A posix_trace_resume event
 * follows it, at the first event recorded again. */
struct posix_trace_overflow_data {
    uint64_t lost;           /* lost_in_kernel + lost_in_stream */
    uint64_t lost_in_kernel; /* a per-CPU BPF ring had no room */
    uint64_t lost_in_stream; /* dropped by the stream (POSIX_TRACE_LOOP overwrote
                                them, or POSIX_TRACE_UNTIL_FULL had stopped) */
};

/* Data of a posix_trace_filter event: the filter before and after. */
struct posix_trace_filter_data {
    trace_event_set_t old_filter;
    trace_event_set_t new_filter;
};

/* Totals since the stream was created (or last cleared): events delivered to
 * the stream, and events lost on the way. Returns EINVAL for a bad trid. */
struct posix_trace_counters {
    uint64_t recorded;
    uint64_t lost_in_kernel;
    uint64_t lost_in_stream;
};
int posix_trace_get_counters(trace_id_t trid, struct posix_trace_counters *counters);

#ifdef __cplusplus
}
#endif

#endif /* POSIXTRACE_EVENTS_H */
