/* The posixtrace demo: a process traces itself. Three threads emit user
 * events; the main thread reads them back with the POSIX getnext calls and
 * prints them, with the thread events the kernel recorded meanwhile (the
 * threads created, run, put to sleep and ended). Run it with `make demo`
 * (needs root for BPF). */
#include <errno.h>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
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

/* A thread event's data: which thread, named how, on which CPU, and the
 * values the event type gives (<posix_trace/thread_db.h> says what they
 * are), under the names `posixtrace record` prints them with. */
static void print_thread_event(td_event_e event, const struct td_event_data *td)
{
    printf("thread=%d name=\"%.15s\" cpu=%u", td->tid, td->name, td->cpu);
    unsigned long long value = td->value, value2 = td->value2;
    int status = (int)td->value;
    switch (event) {
    case TD_READY:
        printf(" waker=%llu target_cpu=%llu", value, value2);
        break;
    case TD_SLEEP:
    case TD_SWITCHFROM:
        printf(" state=%llu next=%llu", value, value2);
        break;
    case TD_PREEMPT:
        printf(" next=%llu", value2);
        break;
    case TD_SWITCHTO:
        printf(" previous=%llu", value);
        break;
    case TD_LOCK_TRY:
        printf(" futex=0x%llx op=%llu", value, value2);
        break;
    case TD_TIMEOUT:
        printf(" futex=0x%llx", value);
        break;
    case TD_CATCHSIG:
        printf(" signal=%llu si_code=%d", value, (int)(int32_t)value2);
        break;
    case TD_CREATE:
        printf(" new_thread=%llu new_pthread=0x%llx", value, value2);
        break;
    case TD_DEATH:
        if (WIFSIGNALED(status))
            printf(" signal=%d", WTERMSIG(status));
        else
            printf(" exit_code=%d", WEXITSTATUS(status));
        break;
    case TD_PRI_INHERIT:
        printf(" priority=%llu kernel_priority=%llu", value, value2);
        break;
    case TD_CONCURRENCY:
        printf(" threads=%llu", value);
        break;
    default:
        break;
    }
    printf("\n");
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
        } else if (POSIX_TRACE_TD_EVENT_OF(info.posix_event_id) != 0 &&
                   len == sizeof(struct td_event_data)) {
            struct td_event_data td;
            memcpy(&td, data, sizeof td);
            print_thread_event(POSIX_TRACE_TD_EVENT_OF(info.posix_event_id), &td);
        } else if (info.posix_event_id == POSIX_TRACE_STOP &&
                   len == sizeof(struct posix_trace_stop_data)) {
            struct posix_trace_stop_data stop;
            memcpy(&stop, data, sizeof stop);
            printf("%s\n", stop.cause == POSIX_TRACE_STOP_BY_CALL
                               ? "by posix_trace_stop"
                               : "the stream or its log is full");
        } else if (info.posix_event_id == POSIX_TRACE_OVERFLOW &&
                   len == sizeof(struct posix_trace_overflow_data)) {
            struct posix_trace_overflow_data lost;
            memcpy(&lost, data, sizeof lost);
            printf("lost=%llu in_kernel=%llu in_stream=%llu\n", (unsigned long long)lost.lost,
                   (unsigned long long)lost.lost_in_kernel,
                   (unsigned long long)lost.lost_in_stream);
        } else if (len == 0) {
            printf("\n");
        } else {
            printf("%zu bytes\n", len);
        }
    }
    posix_trace_shutdown(trid);
    posix_trace_attr_destroy(&attr);
    return 0;
}
