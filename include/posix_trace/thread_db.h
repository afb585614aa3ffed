/* posix_trace/thread_db.h -- extension: the thread event facility of
 * Solaris libc_db (td_ta_event_addr, td_thr_event_enable, ... td_eventisempty),
 * generated in the kernel for the threads of a traced process.
 *
 * This is posixtrace's own implementation. It does not load or replace
 * glibc's libthread_db, and declares the same type names as glibc's
 * <thread_db.h>: include one or the other.
 */
#ifndef POSIXTRACE_THREAD_DB_H
#define POSIXTRACE_THREAD_DB_H

#include <posix_trace/events.h>
#include <stdint.h>
#include <sys/types.h>
#include <trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes, in glibc's order. Those the facility returns:
 *   TD_OK       success
 *   TD_ERR      a bad parameter (a NULL pointer, an event number out of range)
 *   TD_BADTA    not a live agent (NULL, released, or never obtained)
 *   TD_BADTH    not a valid thread handle (NULL, its agent released, or no
 *               such thread in the agent's process)
 *   TD_BADPH    the agent's process has ended, or its stream was shut down
 *   TD_DBERR    the kernel refused an update of the masks (a BPF map call),
 *               e.g. its table of processes with an agent is full (4,096 a
 *               stream)
 *   TD_NOMSG    no event message to return
 *   TD_NOCAPAB  td_thr_event_enable / td_thr_set_event / td_thr_clear_event:
 *               the kernel's per-thread table is full (65,536 threads a stream)
 */
typedef enum {
    TD_OK,
    TD_ERR,
    TD_NOTHR,
    TD_NOSV,
    TD_NOLWP,
    TD_BADPH,
    TD_BADTH,
    TD_BADSH,
    TD_BADTA,
    TD_BADKEY,
    TD_NOMSG,
    TD_NOFPREGS,
    TD_NOLIBTHREAD,
    TD_NOEVENT,
    TD_NOCAPAB,
    TD_DBERR,
    TD_NOAPLIC,
    TD_NOTSD,
    TD_MALLOC,
    TD_PARTIALREG,
    TD_NOXREGS,
    TD_TLSDEFER,
    TD_NOTALLOC = TD_TLSDEFER,
    TD_VERSION,
    TD_NOTLS
} td_err_e;

/* The fourteen event types. Trace event type id of TD event n:
 * POSIX_TRACE_TD_EVENT_FIRST + n - 1 (16 .. 29), named td_ready ... td_timeout.
 *
 * What produces each on Linux (1:1 threads), in the kernel, and the event's
 * thread (td_event_data.tid: whose reporting flag and mask decide):
 *
 *   TD_READY        sched_wakeup / sched_wakeup_new: the thread was woken
 *                   (made runnable). value: the waker's tid; value2: the CPU
 *                   it will run on.
 *   TD_SLEEP        sched_switch, the thread switched off while not runnable
 *                   and not preempted: it blocked (the kernel counts these in
 *                   voluntary_ctxt_switches). value: the state it left in
 *                   (1 interruptible, 2 uninterruptible, 0x80 dead, ...);
 *                   value2: the tid switched to.
 *   TD_SWITCHTO     sched_switch, the thread is put on a CPU. value: the tid
 *                   switched from (0: the idle task).
 *   TD_SWITCHFROM   sched_switch, the thread is taken off its CPU. value: the
 *                   state left in (0: still runnable); value2: the tid
 *                   switched to.
 *   TD_LOCK_TRY     sys_enter_futex with a blocking operation (FUTEX_WAIT,
 *                   FUTEX_WAIT_BITSET, FUTEX_LOCK_PI, FUTEX_LOCK_PI2,
 *                   FUTEX_WAIT_REQUEUE_PI): the slow path of a contended
 *                   mutex, rwlock, condition variable, semaphore or barrier.
 *                   value: the futex address (a pthread_mutex_t's address);
 *                   value2: the futex operation.
 *   TD_CATCHSIG     signal_deliver: a signal is delivered to the thread (its
 *                   handler or default action runs). value: the signal
 *                   number; value2: si_code.
 *   TD_IDLE         sched_switch from the thread to the CPU's idle task: the
 *                   CPU goes idle after it. value: the CPU.
 *   TD_CREATE       sched_process_fork of a thread (clone with CLONE_THREAD),
 *                   reported by the creating thread before the new one runs.
 *                   value: the new thread's tid; value2: its pthread_t.
 *   TD_DEATH        sched_process_exit: the thread exits. value: its exit
 *                   status as waitpid reports it.
 *   TD_PREEMPT      sched_switch, the thread switched off while still
 *                   runnable (preempted or yielding: the kernel counts these
 *                   in nonvoluntary_ctxt_switches). value: the state (0);
 *                   value2: the tid switched to.
 *   TD_PRI_INHERIT  sched_pi_setprio raising the thread's priority through
 *                   priority inheritance (it holds a PI mutex a higher
 *                   priority thread waits for). value: the boosted
 *                   sched_priority (1..99 for real-time, 0 otherwise);
 *                   value2: the kernel priority (0..139, lower is higher).
 *   TD_REAP         sched_process_free: the thread's task is freed (after its
 *                   death; a thread of a process that has ended entirely is
 *                   not reported).
 *   TD_CONCURRENCY  sched_process_fork of a thread and sched_process_exit: the
 *                   number of live threads of the process changed. value: the
 *                   new number (Threads: in /proc/PID/status once settled).
 *   TD_TIMEOUT      sys_exit_futex returning ETIMEDOUT after a TD_LOCK_TRY
 *                   wait: a timed wait (pthread_cond_timedwait,
 *                   pthread_mutex_timedlock, sem_timedwait) expired.
 *                   value: the futex address.
 */
typedef enum {
    TD_ALL_EVENTS,
    TD_READY,
    TD_SLEEP,
    TD_SWITCHTO,
    TD_SWITCHFROM,
    TD_LOCK_TRY,
    TD_CATCHSIG,
    TD_IDLE,
    TD_CREATE,
    TD_DEATH,
    TD_PREEMPT,
    TD_PRI_INHERIT,
    TD_REAP,
    TD_CONCURRENCY,
    TD_TIMEOUT,
    TD_MIN_EVENT_NUM = TD_READY,
    TD_MAX_EVENT_NUM = TD_TIMEOUT,
    TD_EVENTS_ENABLE = 31
} td_event_e;
typedef td_event_e td_thr_events_e; /* thread_db's name */

/* The trace event type id of TD event `n` (TD_READY .. TD_TIMEOUT), and the TD
 * event a trace event type id is: TD_ALL_EVENTS (0) when it is none. */
#define POSIX_TRACE_TD_EVENT_ID(n) ((trace_event_id_t)(POSIX_TRACE_TD_EVENT_FIRST + (n) - 1u))
#define POSIX_TRACE_TD_EVENT_OF(id)                                                        \
    ((td_event_e)((id) >= POSIX_TRACE_TD_EVENT_FIRST &&                                    \
                          (id) < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT   \
                      ? (id) - POSIX_TRACE_TD_EVENT_FIRST + 1u                             \
                      : 0u))

/* The data of every td_* trace event: 48 bytes, little-endian. */
struct td_event_data {
    int32_t tid;         /* the event's thread (kernel tid) */
    uint32_t cpu;        /* the CPU it was recorded on */
    uint64_t pthread_id; /* that thread's pthread_t (FS base on x86-64) */
    uint64_t value;      /* the event's own value (above) */
    uint64_t value2;     /* its second value (above), else 0 */
    char name[16];       /* the thread's name (comm) at the event, NUL-terminated */
};

/* Event sets. */
#define TD_EVENTSIZE 2
#define BT_UISHIFT 5 /* log base 2 of 32, the bits of a word */
#define BT_NBIPUI (1 << BT_UISHIFT)
#define BT_UIMASK (BT_NBIPUI - 1)
typedef struct td_thr_events {
    uint32_t event_bits[TD_EVENTSIZE];
} td_thr_events_t;

#define __td_eventmask(n) ((uint32_t)1 << (((n) - 1) & BT_UIMASK))
#define __td_eventword(n) ((unsigned)((n) - 1) >> BT_UISHIFT)

#define td_event_emptyset(setp)                                                                    \
    do {                                                                                           \
        int __i;                                                                                   \
        for (__i = TD_EVENTSIZE; __i > 0; --__i)                                                   \
            (setp)->event_bits[__i - 1] = 0;                                                       \
    } while (0)
#define td_event_fillset(setp)                                                                     \
    do {                                                                                           \
        int __i;                                                                                   \
        for (__i = TD_EVENTSIZE; __i > 0; --__i)                                                   \
            (setp)->event_bits[__i - 1] = UINT32_MAX;                                              \
    } while (0)
#define td_event_addset(setp, n) (((setp)->event_bits[__td_eventword(n)]) |= __td_eventmask(n))
#define td_event_delset(setp, n) (((setp)->event_bits[__td_eventword(n)]) &= ~__td_eventmask(n))
#define td_eventismember(setp, n)                                                                  \
    ((__td_eventmask(n) & ((setp)->event_bits[__td_eventword(n)])) != 0)
#define td_eventisempty(setp) ((setp)->event_bits[0] == 0 && (setp)->event_bits[1] == 0)

/* Where an event type is reported: a function of libposixtrace, called in
 * the controlling process each time a reported event of that type reaches
 * it; a debugger's breakpoint there fires for that event. */
typedef enum { NOTIFY_BPT, NOTIFY_AUTOBPT, NOTIFY_SYSCALL } td_notify_e;
typedef struct td_notify {
    td_notify_e type;
    union {
        uintptr_t bptaddr;
        int syscallno;
    } u;
} td_notify_t;

/* An agent: the controlling process's handle on one traced process. */
typedef struct td_thragent td_thragent_t;

/* A thread of the agent's process. th_unique is its kernel tid. */
typedef struct td_thrhandle {
    td_thragent_t *th_ta_p;
    uintptr_t th_unique;
} td_thrhandle_t;

/* An event message: the event, the thread (a handle owned by the agent,
 * valid until the agent is released) and the event's value. */
typedef struct td_event_msg {
    td_event_e event;
    const td_thrhandle_t *th_p;
    union {
        uintptr_t data;
    } msg;
} td_event_msg_t;

/* ---- obtaining agents and handles (posixtrace's own) --------------------
 *
 * How the TD masks and the stream's filter combine: a thread event is
 * recorded in a stream when the stream runs, its type passes the stream's
 * filter (posix_trace_set_filter), and it is reported. While no agent
 * controls a process, every thread of it reports every event (the filter
 * alone decides). Once an agent controls it, thread_db's rule applies:
 * reported if and only if the thread has reporting enabled and the type is
 * in the thread's mask or in the global mask; threads start with reporting
 * disabled and empty masks; reported events also fill the thread's message
 * buffer. All of it is decided in the kernel: an event not reported costs
 * no ring space. */

/* An agent for process `pid`, from stream `trid` that traces it (the events
 * go to that stream). TD_OK, TD_BADPH (trid is not a stream of this process,
 * or pid is not traced by it), TD_ERR (ta NULL), TD_DBERR. */
td_err_e td_ta_new_from_stream(trace_id_t trid, pid_t pid, td_thragent_t **ta);

/* An agent for process `pid` with a stream of its own, started with only the
 * thread events, whose reported events reach the notify functions and the
 * message buffers. TD_OK, TD_BADPH (no such process, no privilege to trace,
 * TRACE_SYS_MAX reached), TD_ERR (ta NULL). */
td_err_e td_ta_new_pid(pid_t pid, td_thragent_t **ta);

/* The handle of thread `tid` of the agent's process: TD_OK, TD_BADTA,
 * TD_ERR (th NULL), TD_NOLWP (no such thread in that process). */
td_err_e td_ta_map_lwp2thr(const td_thragent_t *ta, pid_t tid, td_thrhandle_t *th);

/* Releases an agent: the process's events are reported for all threads
 * again; its own stream, if any, is shut down. TD_OK, TD_BADTA. */
td_err_e td_ta_delete(td_thragent_t *ta);

/* ---- thread_db's calls ------------------------------------------------- */
td_err_e td_ta_event_addr(const td_thragent_t *ta, td_event_e event, td_notify_t *notify);
td_err_e td_thr_event_enable(const td_thrhandle_t *th, int on_off);
td_err_e td_thr_set_event(const td_thrhandle_t *th, td_thr_events_t *events);
td_err_e td_ta_set_event(const td_thragent_t *ta, td_thr_events_t *events);
td_err_e td_thr_clear_event(const td_thrhandle_t *th, td_thr_events_t *events);
td_err_e td_ta_clear_event(const td_thragent_t *ta, td_thr_events_t *events);
td_err_e td_thr_event_getmsg(const td_thrhandle_t *th, td_event_msg_t *msg);
td_err_e td_ta_event_getmsg(const td_thragent_t *ta, td_event_msg_t *msg);

#ifdef __cplusplus
}
#endif

#endif /* POSIXTRACE_THREAD_DB_H */
