/* <trace.h> -- the POSIX Tracing option (IEEE Std 1003.1-2017, 2.11) for Linux.
 *
 * Implemented by libposixtrace on BPF: see README.md. Everything POSIX asks of
 * this header is here; the project's own additions are marked "extension".
 */
#ifndef POSIXTRACE_TRACE_H
#define POSIXTRACE_TRACE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Limits ------------------------------------------------------------ */

/* The name limits are buffer sizes, terminating NUL included: an event type
 * name has at most 127 characters and a trace name at most 63. A longer
 * event type name is refused with ENAMETOOLONG (posix_trace_eventid_open,
 * posix_trace_trid_eventid_open); a longer trace name is truncated to 63
 * characters (POSIX: "truncated to one less than the length of
 * {TRACE_NAME_MAX}"). A buffer of TRACE_EVENT_NAME_MAX or TRACE_NAME_MAX
 * bytes holds any name returned. */
#define TRACE_EVENT_NAME_MAX 128
#define TRACE_NAME_MAX 64
#define TRACE_USER_EVENT_MAX 1024
#define TRACE_SYS_MAX 16

#define _POSIX_TRACE_EVENT_NAME_MAX 30
#define _POSIX_TRACE_NAME_MAX 8
#define _POSIX_TRACE_SYS_MAX 8
#define _POSIX_TRACE_USER_EVENT_MAX 32

/* ---- Types ------------------------------------------------------------- */

typedef int trace_id_t;
typedef unsigned int trace_event_id_t;

/* Largest event type id + 1: every set and filter is a bitmap this wide. */
#define POSIX_TRACE_EVENT_ID_LIMIT 8192

typedef struct {
    uint64_t __bits[POSIX_TRACE_EVENT_ID_LIMIT / 64];
} trace_event_set_t;

/* Opaque storage for the attributes object; initialise with
 * posix_trace_attr_init(). */
typedef struct {
    uint64_t __opaque[32];
} trace_attr_t;

struct posix_trace_event_info {
    trace_event_id_t posix_event_id;
    pid_t posix_pid;
    void *posix_prog_address;
    pthread_t posix_thread_id;
    struct timespec posix_timestamp;
    int posix_truncation_status;
    /* extension: kernel thread id (gettid()) of the thread that generated
     * the event; 0 for events the implementation generates. */
    pid_t posix_tid;
};

struct posix_trace_status_info {
    int posix_stream_full_status;
    int posix_stream_overrun_status;
    int posix_stream_status;
    int posix_log_full_status;
    int posix_log_overrun_status;
    int posix_stream_flush_error;
    int posix_stream_flush_status;
};

/* ---- Constants --------------------------------------------------------- */

/* Stream status */
#define POSIX_TRACE_RUNNING 1
#define POSIX_TRACE_SUSPENDED 2

/* Full status */
#define POSIX_TRACE_FULL 1
#define POSIX_TRACE_NOT_FULL 2

/* Overrun status */
#define POSIX_TRACE_OVERRUN 1
#define POSIX_TRACE_NO_OVERRUN 2

/* Flush status */
#define POSIX_TRACE_FLUSHING 1
#define POSIX_TRACE_NOT_FLUSHING 2

/* Full policies (stream and log) */
#define POSIX_TRACE_LOOP 1
#define POSIX_TRACE_UNTIL_FULL 2
#define POSIX_TRACE_FLUSH 3
#define POSIX_TRACE_APPEND 4

/* Inheritance */
#define POSIX_TRACE_CLOSE_FOR_CHILD 1
#define POSIX_TRACE_INHERITED 2

/* Truncation status */
#define POSIX_TRACE_NOT_TRUNCATED 0
#define POSIX_TRACE_TRUNCATED_RECORD 1
#define POSIX_TRACE_TRUNCATED_READ 2

/* posix_trace_eventset_fill() */
#define POSIX_TRACE_WOPID_EVENTS 1
#define POSIX_TRACE_SYSTEM_EVENTS 2
#define POSIX_TRACE_ALL_EVENTS 3

/* posix_trace_set_filter() */
#define POSIX_TRACE_SET_EVENTSET 1
#define POSIX_TRACE_ADD_EVENTSET 2
#define POSIX_TRACE_SUB_EVENTSET 3

/* System trace event type ids (names in posix_trace/events.h). */
#define POSIX_TRACE_START ((trace_event_id_t)0)
#define POSIX_TRACE_STOP ((trace_event_id_t)1)
#define POSIX_TRACE_FILTER ((trace_event_id_t)2)
#define POSIX_TRACE_OVERFLOW ((trace_event_id_t)3)
#define POSIX_TRACE_RESUME ((trace_event_id_t)4)
#define POSIX_TRACE_ERROR ((trace_event_id_t)5)
#define POSIX_TRACE_FLUSH_START ((trace_event_id_t)6)
#define POSIX_TRACE_FLUSH_STOP ((trace_event_id_t)7)
#define POSIX_TRACE_UNNAMED_USER_EVENT ((trace_event_id_t)31)
#define POSIX_TRACE_UNNAMED_USEREVENT POSIX_TRACE_UNNAMED_USER_EVENT

/* ---- Functions --------------------------------------------------------- */

int posix_trace_attr_destroy(trace_attr_t *);
int posix_trace_attr_getclockres(const trace_attr_t *, struct timespec *);
int posix_trace_attr_getcreatetime(const trace_attr_t *, struct timespec *);
int posix_trace_attr_getgenversion(const trace_attr_t *, char *);
int posix_trace_attr_getinherited(const trace_attr_t *__restrict, int *__restrict);
int posix_trace_attr_getlogfullpolicy(const trace_attr_t *__restrict, int *__restrict);
int posix_trace_attr_getlogsize(const trace_attr_t *__restrict, size_t *__restrict);
int posix_trace_attr_getmaxdatasize(const trace_attr_t *__restrict, size_t *__restrict);
int posix_trace_attr_getmaxsystemeventsize(const trace_attr_t *__restrict, size_t *__restrict);
int posix_trace_attr_getmaxusereventsize(const trace_attr_t *__restrict, size_t,
                                         size_t *__restrict);
int posix_trace_attr_getname(const trace_attr_t *, char *);
int posix_trace_attr_getstreamfullpolicy(const trace_attr_t *__restrict, int *__restrict);
int posix_trace_attr_getstreamsize(const trace_attr_t *__restrict, size_t *__restrict);
int posix_trace_attr_init(trace_attr_t *);
int posix_trace_attr_setinherited(trace_attr_t *, int);
int posix_trace_attr_setlogfullpolicy(trace_attr_t *, int);
int posix_trace_attr_setlogsize(trace_attr_t *, size_t);
int posix_trace_attr_setmaxdatasize(trace_attr_t *, size_t);
int posix_trace_attr_setname(trace_attr_t *, const char *);
int posix_trace_attr_setstreamfullpolicy(trace_attr_t *, int);
int posix_trace_attr_setstreamsize(trace_attr_t *, size_t);
int posix_trace_clear(trace_id_t);
int posix_trace_close(trace_id_t);
int posix_trace_create(pid_t, const trace_attr_t *__restrict, trace_id_t *__restrict);
int posix_trace_create_withlog(pid_t, const trace_attr_t *__restrict, int,
                               trace_id_t *__restrict);
void posix_trace_event(trace_event_id_t, const void *__restrict, size_t);
int posix_trace_eventid_equal(trace_id_t, trace_event_id_t, trace_event_id_t);
int posix_trace_eventid_get_name(trace_id_t, trace_event_id_t, char *);
int posix_trace_eventid_open(const char *__restrict, trace_event_id_t *__restrict);
int posix_trace_eventset_add(trace_event_id_t, trace_event_set_t *);
int posix_trace_eventset_del(trace_event_id_t, trace_event_set_t *);
int posix_trace_eventset_empty(trace_event_set_t *);
int posix_trace_eventset_fill(trace_event_set_t *, int);
int posix_trace_eventset_ismember(trace_event_id_t, const trace_event_set_t *__restrict,
                                  int *__restrict);
int posix_trace_eventtypelist_getnext_id(trace_id_t, trace_event_id_t *__restrict,
                                         int *__restrict);
int posix_trace_eventtypelist_rewind(trace_id_t);
int posix_trace_flush(trace_id_t);
int posix_trace_get_attr(trace_id_t, trace_attr_t *);
int posix_trace_get_filter(trace_id_t, trace_event_set_t *);
int posix_trace_get_status(trace_id_t, struct posix_trace_status_info *);
int posix_trace_getnext_event(trace_id_t, struct posix_trace_event_info *__restrict,
                              void *__restrict, size_t, size_t *__restrict, int *__restrict);
int posix_trace_open(int, trace_id_t *);
int posix_trace_rewind(trace_id_t);
int posix_trace_set_filter(trace_id_t, const trace_event_set_t *, int);
int posix_trace_shutdown(trace_id_t);
int posix_trace_start(trace_id_t);
int posix_trace_stop(trace_id_t);
int posix_trace_timedgetnext_event(trace_id_t, struct posix_trace_event_info *__restrict,
                                   void *__restrict, size_t, size_t *__restrict,
                                   int *__restrict, const struct timespec *__restrict);
int posix_trace_trid_eventid_open(trace_id_t, const char *__restrict,
                                  trace_event_id_t *__restrict);
int posix_trace_trygetnext_event(trace_id_t, struct posix_trace_event_info *__restrict,
                                 void *__restrict, size_t, size_t *__restrict, int *__restrict);

#ifdef __cplusplus
}
#endif

#endif /* POSIXTRACE_TRACE_H */
