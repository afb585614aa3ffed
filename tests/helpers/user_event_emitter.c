/* A process linked with libposixtrace that knows nothing of its tracer: it
 * registers one user event name, says "ready", waits for a line, registers a
 * second name, emits one event of each, says "done", waits for a line, exits.
 * `user_event_emitter two` registers "emitter.early" too before "ready"
 * (after "emitter.before"). */
#include <stdio.h>
#include <string.h>
#include <trace.h>

int main(int argc, char **argv)
{
    char line[16];
    trace_event_id_t before, after, early;
    posix_trace_eventid_open("emitter.before", &before);
    if (argc == 2 && strcmp(argv[1], "two") == 0)
        posix_trace_eventid_open("emitter.early", &early);
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
