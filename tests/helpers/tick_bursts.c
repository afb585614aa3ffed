/* Fires its USDT probe ticks:tick in bursts, from one CPU. It says "ready";
 * for each line "CPU BURSTS TICKS PAUSE_US" it read, it moves to CPU, fires
 * BURSTS bursts of TICKS ticks (the argument: the tick's number, counted
 * across bursts), sleeps PAUSE_US microseconds after each, and says "done".
 * It exits at the end of its input. */
#define _GNU_SOURCE
#include <posix_trace/usdt.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    char line[64];
    unsigned long tick = 0;
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        int cpu, bursts, ticks, pause_us;
        if (sscanf(line, "%d %d %d %d", &cpu, &bursts, &ticks, &pause_us) != 4)
            return 1;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            return 1;
        for (int burst = 0; burst < bursts; ++burst) {
            for (int i = 0; i < ticks; ++i, ++tick)
                POSIX_TRACE_USDT(ticks, tick, tick);
            usleep((useconds_t)pause_us);
        }
        printf("done\n");
        fflush(stdout);
    }
    return 0;
}
