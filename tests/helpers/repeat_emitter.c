/* A process traced by pid again and again: it names "repeat.event", says
 * "ready", then for each line it reads emits that event once (its data: the
 * round, an int), fires its own USDT probe repeat:fire once (argument: the
 * round), and says "done"; it exits at the end of its input. */
#include <posix_trace/usdt.h>
#include <stdio.h>
#include <trace.h>

int main(void)
{
    char line[16];
    trace_event_id_t id;
    if (posix_trace_eventid_open("repeat.event", &id) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    for (int round = 0; fgets(line, sizeof line, stdin); ++round) {
        posix_trace_event(id, &round, sizeof round);
        POSIX_TRACE_USDT(repeat, fire, round);
        printf("done\n");
        fflush(stdout);
    }
    return 0;
}
