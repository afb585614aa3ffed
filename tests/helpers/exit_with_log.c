/* A process that traces itself into a log at argv[1], emits the user events
 * 0 .. 99 and returns from main without shutting its stream down: exit must
 * do it (POSIX), flushing the stream into the log and closing the log.
 * Its event type is opened first, and a stream lived and ended before the
 * logged one (which takes the kernel side it left): the library's state
 * made before the first stream, and its threads, outlive the exit
 * handlers run before the streams are shut down. */
#include <fcntl.h>
#include <posix_trace/events.h>
#include <trace.h>

#include "helpers.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 3;
    trace_event_id_t id;
    if (posix_trace_eventid_open("exit.numbered", &id) != 0)
        return 5;
    trace_id_t trid;
    if (posix_trace_create(0, NULL, &trid) != 0 || posix_trace_shutdown(trid) != 0)
        return 6;
    if (posix_trace_create_withlog(0, NULL, fd, &trid) != 0)
        return 4;
    if (filter_thread_events(trid) != 0 || posix_trace_start(trid) != 0)
        return 5;
    for (int i = 0; i < 100; ++i)
        posix_trace_event(id, &i, sizeof i);
    return 0;
}
