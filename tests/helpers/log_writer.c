/* A tracer that is killed while it writes: it traces itself into a log at
 * argv[1] (log full policy argv[2]: append or loop), says "ready", then emits
 * user events whose data is a counter 0, 1, 2, ... as fast as it can,
 * flushing every 500 events, until it is killed. */
#include <fcntl.h>
#include <posix_trace/events.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <trace.h>

#include "helpers.h"

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 3;
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    int loop = strcmp(argv[2], "loop") == 0;
    posix_trace_attr_setlogfullpolicy(&attr, loop ? POSIX_TRACE_LOOP : POSIX_TRACE_APPEND);
    posix_trace_attr_setlogsize(&attr, 256 * 1024);
    posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_FLUSH);
    posix_trace_attr_setstreamsize(&attr, 64 * 1024);
    trace_id_t trid;
    if (posix_trace_create_withlog(0, &attr, fd, &trid) != 0)
        return 4;
    filter_thread_events(trid);
    trace_event_id_t counter;
    posix_trace_eventid_open("killed.counter", &counter);
    posix_trace_start(trid);
    printf("ready\n");
    fflush(stdout);
    for (uint64_t i = 0;; ++i) {
        posix_trace_event(counter, &i, sizeof i);
        if (i % 500 == 499)
            posix_trace_flush(trid);
    }
}
