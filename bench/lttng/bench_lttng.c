/* The LTTng-UST peer of bench_user_event: COUNT events of 64 bytes through
 * one tracepoint, timed in the emitting thread, as posixtrace's user events
 * are. Whether the tracepoint is enabled is up to the LTTng session around
 * the run (bench/lttng/run_lttng.sh); the line printed says which it was.
 *   bench_lttng COUNT   ->  ns_per_event=... enabled=0|1 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_tp.h"

static double now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s COUNT\n", argv[0]);
        return 2;
    }
    long count = atol(argv[1]);
    uint8_t payload[64];
    for (unsigned i = 0; i < sizeof payload; ++i)
        payload[i] = (uint8_t)i;
    double begin = now_ns();
    for (long i = 0; i < count; ++i)
        lttng_ust_tracepoint(posixtrace_bench, event, (unsigned)i, payload, sizeof payload);
    double elapsed = now_ns() - begin;
    printf("ns_per_event=%.1f enabled=%d\n", elapsed / (double)count,
           lttng_ust_tracepoint_enabled(posixtrace_bench, event) ? 1 : 0);
    return 0;
}
