/* A short-lived process that names its user events late: it sleeps 0.2 s
 * (long after a tracer attached; argv[2]: another delay in ms), registers PREFIX.a, PREFIX.b and PREFIX.c
 * (PREFIX: argv[1], default "late"), emits 9 events (event i is name i % 3,
 * data i as an int) and exits at once. */
#include <stdio.h>
#include <stdlib.h>
#include <trace.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *prefix = argc > 1 ? argv[1] : "late";
    const char suffixes[] = "abc";
    trace_event_id_t ids[3];
    usleep(argc > 2 ? (useconds_t)atoi(argv[2]) * 1000 : 200000);
    for (int i = 0; i < 3; ++i) {
        char name[64];
        snprintf(name, sizeof name, "%s.%c", prefix, suffixes[i]);
        if (posix_trace_eventid_open(name, &ids[i]) != 0)
            return 1;
    }
    for (int i = 0; i < 9; ++i)
        posix_trace_event(ids[i % 3], &i, sizeof i);
    return 0;
}
