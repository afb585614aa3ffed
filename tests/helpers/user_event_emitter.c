/* A process linked with libposixtrace that knows nothing of its tracer: it
 * registers one user event name, says "ready", waits for a line, registers a
 * second name, emits one event of each, says "done", waits for a line, exits. */
#include <stdio.h>
#include <string.h>
#include <trace.h>

int main(void)
{
    char line[16];
    trace_event_id_t before, after;
    posix_trace_eventid_open("emitter.before", &before);
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    posix_trace_eventid_open("emitter.after", &after);
    const char first[] = "first payload", second[] = "second payload";
    posix_trace_event(before, first, sizeof first);
    posix_trace_event(after, second, sizeof second);
    printf("done\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    return 0;
}
