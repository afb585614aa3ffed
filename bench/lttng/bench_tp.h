/* The LTTng-UST tracepoint provider of the user-event benchmark's peer: one
 * event carrying an id and a byte sequence, the shape of a posix_trace_event()
 * call (bench/lttng/bench_lttng.c). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER posixtrace_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./bench_tp.h"

#if !defined(BENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_TP_H

#include <lttng/tracepoint.h>
#include <stddef.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(
    posixtrace_bench, event,
    LTTNG_UST_TP_ARGS(unsigned int, id, const uint8_t *, data, size_t, data_len),
    LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(unsigned int, id, id)
                            lttng_ust_field_sequence(uint8_t, data, data, size_t, data_len)))

#endif /* BENCH_TP_H */

#include <lttng/tracepoint-event.h>
