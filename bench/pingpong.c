/* Two threads of one process, pinned to CPU 0, pass a byte back and forth
 * through two pipes N times: every round trip is two context switches and
 * two wake-ups. Prints "seconds=S round_trips=N" on stderr, or into the
 * file named by the second argument. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long round_trips;

static void pin_to_cpu0(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof one, &one);
}

static void *responder(void *unused)
{
    (void)unused;
    pin_to_cpu0();
    char byte;
    for (long i = 0; i < round_trips; ++i)
        if (read(ping[0], &byte, 1) != 1 || write(pong[1], &byte, 1) != 1)
            exit(1);
    return NULL;
}

int main(int argc, char **argv)
{
    round_trips = argc > 1 ? atol(argv[1]) : 500000;
    if (pipe(ping) || pipe(pong))
        return 1;
    pin_to_cpu0();
    pthread_t thread;
    pthread_create(&thread, NULL, responder, NULL);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char byte = 'x';
    for (long i = 0; i < round_trips; ++i)
        if (write(ping[1], &byte, 1) != 1 || read(pong[0], &byte, 1) != 1)
            return 1;
    clock_gettime(CLOCK_MONOTONIC, &end);
    pthread_join(thread, NULL);
    FILE *report = argc > 2 ? fopen(argv[2], "w") : stderr;
    if (!report)
        return 1;
    fprintf(report, "seconds=%.3f round_trips=%ld\n",
            (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9, round_trips);
    return 0;
}
