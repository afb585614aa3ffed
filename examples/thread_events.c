/* Thread events of a running process with the libc_db-style calls of
 * <posix_trace/thread_db.h>: report td_create and td_death for every thread
 * of PID (default: this process, which then starts two threads), and print
 * the messages. Needs root (the agent loads BPF programs).
 *
 *   build/examples/thread_events [PID]
 */
#include <posix_trace/thread_db.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *worker(void *unused)
{
    (void)unused;
    usleep(10000);
    return NULL;
}

int main(int argc, char **argv)
{
    pid_t pid = argc > 1 ? (pid_t)atoi(argv[1]) : getpid();
    td_thragent_t *ta;
    if (td_ta_new_pid(pid, &ta) != TD_OK) {
        fprintf(stderr, "cannot trace %d (root needed)\n", (int)pid);
        return 1;
    }
    td_thr_events_t events;
    td_event_emptyset(&events);
    td_event_addset(&events, TD_CREATE);
    td_event_addset(&events, TD_DEATH);
    td_ta_set_event(ta, &events); /* the global mask: every thread of pid */

    td_thrhandle_t main_thread;
    td_ta_map_lwp2thr(ta, pid, &main_thread);
    td_thr_event_enable(&main_thread, 1); /* threads report nothing until enabled */

    if (argc == 1) { /* tracing itself: make something happen */
        pthread_t threads[2];
        for (int i = 0; i < 2; ++i)
            pthread_create(&threads[i], NULL, worker, NULL);
        for (int i = 0; i < 2; ++i)
            pthread_join(threads[i], NULL);
    } else {
        sleep(5);
    }
    usleep(100000); /* messages reach the buffers through the kernel */

    /* One message per thread: a thread's second event overwrites its first. */
    td_event_msg_t msg;
    while (td_ta_event_getmsg(ta, &msg) == TD_OK)
        printf("thread %lu: %s, value %lu\n", (unsigned long)msg.th_p->th_unique,
               msg.event == TD_CREATE ? "td_create" : msg.event == TD_DEATH ? "td_death" : "other",
               (unsigned long)msg.msg.data);
    td_ta_delete(ta);
    return 0;
}
