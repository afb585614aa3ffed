/* posix_trace/events.h -- extension: the event type id layout and the data
 * carried by the system trace events of libposixtrace.
 */
#ifndef POSIXTRACE_EVENTS_H
#define POSIXTRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Event type ids (trace_event_id_t):
 *   0 .. 7                 POSIX system events (POSIX_TRACE_START ... FLUSH_STOP)
 *   8 .. 10                process lifecycle: process_fork, process_exec, process_exit
 *   16 .. 29               thread events td_ready ... td_timeout
 *   31                     posix_trace_unnamed_userevent
 *   32 .. 32+TRACE_USER_EVENT_MAX-1   user events, in order of registration
 *   2048 .. 8191           USDT probes of the traced process, per stream
 * All ids are below POSIX_TRACE_EVENT_ID_LIMIT. */
#define POSIX_TRACE_SYSTEM_EVENT_COUNT 8
#define POSIX_TRACE_PROCESS_FORK 8u
#define POSIX_TRACE_PROCESS_EXEC 9u
#define POSIX_TRACE_PROCESS_EXIT 10u
#define POSIX_TRACE_TD_EVENT_FIRST 16u
#define POSIX_TRACE_TD_EVENT_COUNT 14u
#define POSIX_TRACE_USER_EVENT_FIRST 32u
#define POSIX_TRACE_USDT_EVENT_FIRST 2048u

/* Data of a posix_trace_stop event: why the stream stopped. */
enum posix_trace_stop_cause {
    POSIX_TRACE_STOP_BY_CALL = 0,     /* posix_trace_stop() or shutdown */
    POSIX_TRACE_STOP_STREAM_FULL = 1, /* POSIX_TRACE_UNTIL_FULL stream became full */
    POSIX_TRACE_STOP_LOG_FULL = 2     /* POSIX_TRACE_UNTIL_FULL log became full: its last event */
};
struct posix_trace_stop_data {
    uint32_t cause; /* enum posix_trace_stop_cause */
};

/* Data of a posix_trace_overflow event: exactly how many events were lost
 * since the previous overflow event, and where. A posix_trace_resume event
 * follows it, at the first event recorded again. */
struct posix_trace_overflow_data {
    uint64_t lost;           /* lost_in_kernel + lost_in_stream */
    uint64_t lost_in_kernel; /* a per-CPU BPF ring had no room */
    uint64_t lost_in_stream; /* dropped by the stream (POSIX_TRACE_LOOP overwrote
                                them, or POSIX_TRACE_UNTIL_FULL had stopped) */
};

/* Data of a posix_trace_error event: a write to the stream's trace log
 * failed. The log ends before the events that write held; they, and every
 * event handed to the log since, are counted lost
 * (posix_trace_get_unwritten_events). posix_trace_flush and posix_trace_shutdown
 * return the error. Queued once, when the stream learns of the failure. */
struct posix_trace_error_data {
    int32_t error; /* the errno of the write: ENOSPC, EFBIG, EIO... */
};

/* Data of a posix_trace_filter event: the filter before and after. */
struct posix_trace_filter_data {
    trace_event_set_t old_filter;
    trace_event_set_t new_filter;
};

/* Process lifecycle events, written in the kernel (sched_process_fork,
 * sched_process_exec, sched_process_exit tracepoints) for every process the
 * stream traces. They are system events: POSIX_TRACE_SYSTEM_EVENTS covers
 * them, POSIX_TRACE_WOPID_EVENTS does not. posix_pid is the process the event
 * is about (the parent for a fork), posix_tid the thread that caused it.
 *
 * process_fork: a traced process created a process (fork, vfork, clone
 * without CLONE_THREAD). With POSIX_TRACE_INHERITED the child is traced from
 * its first instruction: it was added to the traced set in the kernel before
 * it could run. New threads are not processes: they are traced always. */
struct posix_trace_process_fork_data {
    int32_t parent_pid;
    int32_t child_pid;
    uint32_t inherited; /* 1: the child is traced by this stream; 0 without
                           POSIX_TRACE_INHERITED, or when the stream already
                           traces 4096 processes alive at once */
};

/* process_exec: a traced process replaced its image. It stays traced; the
 * probes of the new image (its user-event probe, the USDT probes asked for)
 * are attached once the stream has read this event, within a few
 * milliseconds (see docs/architecture.md). `path` is the file name given to
 * execve, NUL-terminated, at most 255 bytes kept. */
struct posix_trace_process_exec_data {
    int32_t pid;
    int32_t former_tid; /* the thread that called execve (now the pid) */
    char path[];
};

/* process_exit: the last thread of a traced process ended. Every event the
 * process recorded comes before this one. wait_status is as waitpid()
 * reports it: test it with WIFEXITED/WEXITSTATUS, WIFSIGNALED/WTERMSIG. */
struct posix_trace_process_exit_data {
    int32_t pid;
    int32_t wait_status;
};

/* Totals since the stream was created (or last cleared): events delivered to
 * the stream, and events lost on the way. For a trace log opened with
 * posix_trace_open, the totals its stream's shutdown wrote in the log's
 * trailer: ENODATA for a log without one (cut short, or its stream still
 * running). Returns EINVAL for a bad trid. */
struct posix_trace_counters {
    uint64_t recorded;
    uint64_t lost_in_kernel;
    uint64_t lost_in_stream;
};
int posix_trace_get_counters(trace_id_t trid, struct posix_trace_counters *counters);

/* Where those losses come from. The first three add up to lost_in_kernel;
 * the last three, with posix_trace_get_unwritten_events(), to
 * lost_in_stream. Returns EINVAL for a bad trid or a NULL pointer. */
struct posix_trace_loss_counters {
    uint64_t ring_full;           /* a per-CPU BPF ring, or a thread's lane (the user
                                     events of a stream's own process), had no room */
    uint64_t switches_unreported; /* thread events of context switches the kernel made
                                     without firing sched_switch (some kernels do), and
                                     the wakeups it hid with them; each is reported by an
                                     overflow event about that thread */
    uint64_t runs_skipped;        /* program runs the kernel skipped (a program already
                                     running on that CPU: bpf_prog_info.recursion_misses);
                                     each counts as one event, though it may have recorded
                                     none: an over-count, never an under-count */
    uint64_t overwritten;         /* POSIX_TRACE_LOOP made room for newer events */
    uint64_t refused;             /* POSIX_TRACE_UNTIL_FULL was full, the event was
                                     larger than the whole stream, or its record in a
                                     thread's lane was damaged (the process wrote over it:
                                     it claims more data than it holds) */
    uint64_t late;                /* came after younger events had been delivered; the
                                     merge waits for every record being written, so only
                                     a clock breaking its argument could cause it: 0 */
};
int posix_trace_get_loss_counters(trace_id_t trid, struct posix_trace_loss_counters *losses);
/* The events lost in the stream (part of lost_in_stream) because its trace
 * log could not take them: in the block whose write failed, in a later
 * block, or flushed after the failure (posix_trace_error tells when). Not
 * in the log. Apart from the struct above, whose size programs built
 * against earlier versions rely on. 0, or EINVAL (bad trid, NULL). */
int posix_trace_get_unwritten_events(trace_id_t trid, uint64_t *events);

/* The stream's BPF programs and how many of their runs the kernel skipped
 * since they were loaded (runs_skipped above is the sum, reported as it
 * grows). Fills up to `capacity` entries and sets *count to the number of
 * programs (which may be larger). EINVAL for a bad trid or a NULL `count`,
 * or a NULL `programs` with a non-zero capacity. */
struct posix_trace_program_runs {
    char program[32];   /* the BPF program's name, e.g. "td_sched_wakeup" */
    uint64_t skipped;   /* bpf_prog_info.recursion_misses */
};
int posix_trace_get_skipped_runs(trace_id_t trid, struct posix_trace_program_runs *programs,
                                 size_t capacity, size_t *count);

/* Where and when a stream was recorded, for telling its events apart from
 * other hosts' and streams' once they leave the machine. An active stream
 * and a trace log both answer (a log keeps its stream's). Returns 0;
 * EINVAL for a bad trid or a NULL `origin`; ENODATA for a log written by a
 * version that did not keep it. The host name is whatever the recording
 * host called itself: text to escape, not to trust. */
struct posix_trace_origin {
    char host_name[65];          /* uname()'s nodename, in the creator's UTS
                                    namespace; NUL-terminated */
    unsigned char boot_id[16];   /* /proc/sys/kernel/random/boot_id; zero if unknown */
    unsigned char stream_id[16]; /* random (a version 4 UUID), one per stream */
    int64_t realtime_offset_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC, as the stream
                                    converted the kernel's stamps with */
};
int posix_trace_get_origin(trace_id_t trid, struct posix_trace_origin *origin);

/* A process in a PID namespace of its own (a container's) numbers itself
 * and its threads apart from the host: posix_pid and posix_tid of its
 * events are the host's, and this gives the ids the thread had in its own
 * namespace, as getpid() and gettid() there returned them. It answers for
 * the event the calling thread read last from `trid` (with any of the
 * getnext calls; reads of other traces since do not count): 0 and `*ids` filled; ENODATA when that thread was in the
 * host's namespace, when the event is not a thread's (a system event) or
 * is one the kernel could no longer tell (the thread had gone), or when the
 * calling thread has read no event of `trid`; EINVAL for a bad trid or a
 * NULL `ids`. Kernel-side events carry them (thread events, USDT probes,
 * user events of a process traced by pid) and logs keep them. */
struct posix_trace_namespace_ids {
    pid_t pid; /* the process, in its own PID namespace */
    pid_t tid; /* the thread, in the same namespace */
};
int posix_trace_event_namespace_ids(trace_id_t trid, struct posix_trace_namespace_ids *ids);

/* A stream created with POSIX_TRACE_INHERITED follows at most
 * POSIX_TRACE_MAX_TRACED_PROCESSES live processes besides the one it was
 * created for. A child forked while that many are alive is not traced: its
 * process_fork event says inherited = 0, and *children counts it, since the
 * stream was created, even when system events are filtered out. Returns 0;
 * EINVAL for a bad trid (or a log's) or a NULL `children`. */
#define POSIX_TRACE_MAX_TRACED_PROCESSES 4096
int posix_trace_get_untraced_children(trace_id_t trid, uint64_t *children);

#ifdef __cplusplus
}
#endif

#endif /* POSIXTRACE_EVENTS_H */
