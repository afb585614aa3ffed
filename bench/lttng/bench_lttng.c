/* The LTTng-UST peer of bench_user_event and bench_burst: COUNT events of
 * 64 bytes through one tracepoint, from THREADS threads (default 1) that
 * share them, each timed in the emitting thread, as posixtrace's user events
 * are. Whether the tracepoint is enabled is up to the LTTng session around
 * the run (bench/lttng/run_lttng.sh); the line printed says which it was.
 *   bench_lttng COUNT [THREADS]  ->  ns_per_event=... enabled=0|1 */
#include <pthread.h>
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

struct emitter {
    pthread_t thread;
    long count;
    double ns_per_event;
};

static void *emit(void *argument)
{
    struct emitter *self = argument;
    uint8_t payload[64];
    for (unsigned i = 0; i < sizeof payload; ++i)
        payload[i] = (uint8_t)i;
    double begin = now_ns();
    for (long i = 0; i < self->count; ++i)
        lttng_ust_tracepoint(posixtrace_bench, event, (unsigned)i, payload, sizeof payload);
    self->ns_per_event = (now_ns() - begin) / (double)self->count;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s COUNT [THREADS]\n", argv[0]);
        return 2;
    }
    long count = atol(argv[1]);
    int threads = argc == 3 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 64)
        return 2;
    struct emitter emitters[64];
    for (int t = 0; t < threads; ++t) {
        emitters[t].count = count / threads;
        if (pthread_create(&emitters[t].thread, NULL, emit, &emitters[t]) != 0)
            return 1;
    }
    double mean = 0;
    for (int t = 0; t < threads; ++t) {
        pthread_join(emitters[t].thread, NULL);
        mean += emitters[t].ns_per_event / threads;
    }
    printf("ns_per_event=%.1f enabled=%d\n", mean,
           lttng_ust_tracepoint_enabled(posixtrace_bench, event) ? 1 : 0);
    return 0;
}
