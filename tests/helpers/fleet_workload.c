/* One host's share of the fleet tests: 8 threads named worker-0 ... worker-7
 * each take a shared mutex 5 times, holding it 1 ms (so the others block on
 * it: td_lock_try), and emit the user event "fleet.work" (data: its number)
 * each time; the main thread joins them and exits. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <trace.h>

#define WORKERS 8

static trace_event_id_t work;
static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    int number = (int)(long)arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%d", number);
    pthread_setname_np(pthread_self(), name);
    struct timespec held = {0, 1000000};
    nanosleep(&held, NULL); /* switched off once under its new name before its first event */
    for (int i = 0; i < 5; ++i) {
        pthread_mutex_lock(&shared);
        posix_trace_event(work, &number, sizeof number);
        nanosleep(&held, NULL);
        pthread_mutex_unlock(&shared);
    }
    return NULL;
}

int main(void)
{
    if (posix_trace_eventid_open("fleet.work", &work) != 0)
        return 1;
    pthread_t threads[WORKERS];
    for (long i = 0; i < WORKERS; ++i)
        if (pthread_create(&threads[i], NULL, worker, (void *)i) != 0)
            return 2;
    for (int i = 0; i < WORKERS; ++i)
        pthread_join(threads[i], NULL);
    return 0;
}
