/* A program with its own USDT probes placed with <posix_trace/usdt.h>: one
 * guarded by a semaphore, one plain. It says "ready", waits for a line, fires
 * each probe 500 times (the guarded one only while its semaphore is raised),
 * reports how many guarded probes fired, waits for a line, exits. */
#define POSIX_TRACE_USDT_SEMAPHORES
#include <posix_trace/usdt.h>
#include <stdio.h>

POSIX_TRACE_USDT_SEMAPHORE(ownapp, guarded);
POSIX_TRACE_USDT_SEMAPHORE(ownapp, plain);

int main(void)
{
    char line[16];
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    int guarded_fired = 0;
    for (long i = 0; i < 500; ++i) {
        if (POSIX_TRACE_USDT_ENABLED(ownapp, guarded)) {
            POSIX_TRACE_USDT(ownapp, guarded, i, i * 2, "text");
            ++guarded_fired;
        }
        POSIX_TRACE_USDT(ownapp, plain, i);
    }
    printf("fired %d\n", guarded_fired);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    return 0;
}
