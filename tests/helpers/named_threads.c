/* A program to draw: 20 threads named worker-00 ... worker-19, each sleeps
 * 2 ms five times and emits the user event "report.tick" after each of its
 * first three sleeps (data: its number); the main thread joins them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <trace.h>

#define THREADS 20

static trace_event_id_t tick;

static void *worker(void *arg)
{
    int number = (int)(long)arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%02d", number);
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; i < 5; ++i) {
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
        if (i < 3)
            posix_trace_event(tick, &number, sizeof number);
    }
    return NULL;
}

int main(void)
{
    if (posix_trace_eventid_open("report.tick", &tick) != 0)
        return 1;
    pthread_t threads[THREADS];
    for (long i = 0; i < THREADS; ++i)
        if (pthread_create(&threads[i], NULL, worker, (void *)i) != 0)
            return 2;
    for (int i = 0; i < THREADS; ++i)
        pthread_join(threads[i], NULL);
    return 0;
}
