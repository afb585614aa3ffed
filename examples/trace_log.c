/* The Trace Log option: record this process's own user events into a trace
 * log, then read the log back as an analyzer would. Needs root (the stream
 * loads BPF programs); reading a log needs nothing.
 *
 *   build/examples/trace_log [FILE]        (default: /tmp/trace_log_example.ptlog)
 */
#include <errno.h>
#include <fcntl.h>
#include <posix_trace/events.h>
#include <stdio.h>
#include <string.h>
#include <trace.h>
#include <unistd.h>

static int record(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setname(&attr, "example");
    posix_trace_attr_setlogfullpolicy(&attr, POSIX_TRACE_APPEND);
    trace_id_t trid;
    int err = posix_trace_create_withlog(0, &attr, fd, &trid);
    posix_trace_attr_destroy(&attr);
    if (err) {
        fprintf(stderr, "posix_trace_create_withlog: %s\n", strerror(err));
        return 1;
    }
    trace_event_set_t thread_events; /* only our own events */
    posix_trace_eventset_empty(&thread_events);
    for (trace_event_id_t id = POSIX_TRACE_TD_EVENT_FIRST;
         id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT; ++id)
        posix_trace_eventset_add(id, &thread_events);
    posix_trace_set_filter(trid, &thread_events, POSIX_TRACE_SET_EVENTSET);

    trace_event_id_t request;
    posix_trace_eventid_open("example:request", &request);
    posix_trace_start(trid);
    for (int i = 0; i < 5; ++i)
        posix_trace_event(request, &i, sizeof i);
    err = posix_trace_shutdown(trid); /* flushes, writes the trailer */
    close(fd);
    if (err)
        fprintf(stderr, "posix_trace_shutdown: %s\n", strerror(err));
    return err != 0;
}

static int analyze(const char *path)
{
    int fd = open(path, O_RDONLY);
    trace_id_t log;
    int err = fd < 0 ? EINVAL : posix_trace_open(fd, &log);
    if (err) {
        fprintf(stderr, "%s: not a trace log (%s)\n", path, strerror(err));
        return 1;
    }
    struct posix_trace_event_info info;
    unsigned char data[256];
    char name[TRACE_EVENT_NAME_MAX];
    size_t len;
    int unavailable;
    while ((err = posix_trace_getnext_event(log, &info, data, sizeof data, &len, &unavailable)) ==
               0 &&
           !unavailable) {
        posix_trace_eventid_get_name(log, info.posix_event_id, name);
        printf("%ld.%09ld %-20s %zu bytes\n", (long)info.posix_timestamp.tv_sec,
               info.posix_timestamp.tv_nsec, name, len);
    }
    if (err)
        fprintf(stderr, "%s: damaged log (%s)\n", path, strerror(err));
    posix_trace_close(log);
    close(fd);
    return err != 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/trace_log_example.ptlog";
    if (record(path))
        return 1;
    return analyze(path);
}
