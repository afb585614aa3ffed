/* The posixtrace demo: a process traces itself. Three threads emit user
 * events; the main thread reads them back with the POSIX getnext calls and
 * prints them. Run it with `make demo` (needs root for BPF). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <trace.h>
#include <unistd.h>

enum { THREADS = 3, EVENTS_PER_THREAD = 4 };

static trace_event_id_t ev_request, ev_reply;

struct request {
    int worker;
    int sequence;
    char text[24];
};

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    for (int i = 0; i < EVENTS_PER_THREAD; ++i) {
        struct request r = {id, i, ""};
        snprintf(r.text, sizeof r.text, "job %d.%d", id, i);
        posix_trace_event(ev_request, &r, sizeof r);
        usleep(1000);
        posix_trace_event(ev_reply, &i, sizeof i);
    }
    return NULL;
}

int main(void)
{
    trace_attr_t attr;
    trace_id_t trid;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setname(&attr, "demo");
    posix_trace_eventid_open("demo:request", &ev_request);
    posix_trace_eventid_open("demo:reply", &ev_reply);

    int err = posix_trace_create(0, &attr, &trid);
    if (err) {
        fprintf(stderr, "posix_trace_create: %s%s\n", strerror(err),
                err == EPERM ? " (run as root: BPF needs CAP_BPF and CAP_PERFMON)" : "");
        return 1;
    }
    posix_trace_start(trid);

    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; ++t)
        pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; ++t)
        pthread_join(threads[t], NULL);
    posix_trace_stop(trid);

    printf("%10s  %-7s %-18s %-14s %s\n", "time (ms)", "tid", "event", "pthread", "data");
    struct timespec first = {0, 0};
    for (;;) {
        struct posix_trace_event_info info;
        unsigned char data[256];
        size_t len;
        int unavailable;
        posix_trace_trygetnext_event(trid, &info, data, sizeof data, &len, &unavailable);
        if (unavailable)
            break;
        if (first.tv_sec == 0)
            first = info.posix_timestamp;
        double ms = (info.posix_timestamp.tv_sec - first.tv_sec) * 1e3 +
                    (info.posix_timestamp.tv_nsec - first.tv_nsec) / 1e6;
        char name[TRACE_EVENT_NAME_MAX];
        posix_trace_eventid_get_name(trid, info.posix_event_id, name);
        printf("%10.3f  %-7d %-18s %-14lx ", ms, (int)info.posix_tid, name,
               (unsigned long)info.posix_thread_id);
        if (info.posix_event_id == ev_request && len == sizeof(struct request)) {
            struct request r;
            memcpy(&r, data, sizeof r);
            printf("worker=%d seq=%d \"%s\"\n", r.worker, r.sequence, r.text);
        } else if (info.posix_event_id == ev_reply && len == sizeof(int)) {
            int seq;
            memcpy(&seq, data, sizeof seq);
            printf("seq=%d\n", seq);
        } else {
            printf("%zu bytes\n", len);
        }
    }
    posix_trace_shutdown(trid);
    posix_trace_attr_destroy(&attr);
    return 0;
}
