/* Loses the records of its forks and execs on purpose: a tracer that
 * followed its processes by those records alone would read a new image's
 * events through the old image's names, and never attach the new image's
 * probes.
 *
 *   exec_under_flood
 *       Pins itself to CPU 0 at real-time priority, names "first" then
 *       "second", says "ready". At each line "go N COPY" it emits "first"
 *       events without data until CPU 0's ring is surely full, to the last
 *       bytes that could hold a record (a tracer whose threads are pinned to
 *       CPU 0 cannot drain it meanwhile), forks a child that execs "COPY
 *       image N" at once, waits for it, and says "done N PID" (the child's
 *       pid), or "failed N".
 *       At each line "load N LIBRARY" it fills the ring the same way, loads
 *       LIBRARY (a copy of libgatedlib.so) with dlopen, and has it fire its
 *       gatedlib:fire probe (argument: N) 100 ms after the probe is attached,
 *       waiting up to 3 s for that (sleeping: the tracer drains meanwhile);
 *       says "loaded N 1" if it fired, "loaded N 0" if not.
 *   exec_under_flood image N
 *       COPY is a copy of this program, another file each round: its probes
 *       are attached only by a tracer that saw it mapped. Names "second"
 *       then "first", the other way round (their ids are the first image's
 *       for the other name).
 *       Sleeps 50 ms (CPU 0 is free: the tracer drains), waits up to 3 s for
 *       its exec_under_flood:ping probe to be attached (the kernel raises its
 *       semaphore), sleeps 100 ms more (the tracer attaches before it
 *       drains), fires it (argument: N), emits "second" (data: 2000000 + N)
 *       and "first" (data: 1000000 + N), sleeps 50 ms and exits. */
#define _GNU_SOURCE
#define POSIX_TRACE_USDT_SEMAPHORES
#include <dlfcn.h>
#include <posix_trace/usdt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

POSIX_TRACE_USDT_SEMAPHORE(exec_under_flood, ping);

/* Far more records than a 256 KiB ring holds. Without data they are the
 * size of the smallest record the kernel writes (a link-map notice): the
 * ring is left with no room for any. */
enum { kFloodEvents = 12000 };

static void emit(trace_event_id_t id, int value)
{
    char data[64] = {0};
    memcpy(data, &value, sizeof value);
    posix_trace_event(id, data, sizeof data);
}

static trace_event_id_t named(const char *name)
{
    trace_event_id_t id = 0;
    posix_trace_eventid_open(name, &id);
    return id;
}

static int image(int round)
{
    trace_event_id_t second = named("second"), first = named("first");
    usleep(50000);
    for (int waited_ms = 0; !POSIX_TRACE_USDT_ENABLED(exec_under_flood, ping) && waited_ms < 3000;
         ++waited_ms)
        usleep(1000);
    usleep(100000); /* the tracer attaches before it drains: room for what follows */
    if (POSIX_TRACE_USDT_ENABLED(exec_under_flood, ping))
        POSIX_TRACE_USDT(exec_under_flood, ping, round);
    emit(second, 2000000 + round);
    emit(first, 1000000 + round);
    usleep(50000);
    return 0;
}

static int pin_to_cpu0_in_real_time(void)
{
    cpu_set_t cpu0;
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    struct sched_param priority = {.sched_priority = 10};
    return sched_setaffinity(0, sizeof cpu0, &cpu0) == 0 &&
                   sched_setscheduler(0, SCHED_FIFO, &priority) == 0
               ? 0
               : -1;
}

static void fill_ring(trace_event_id_t first)
{
    for (int i = 0; i < kFloodEvents; ++i)
        posix_trace_event(first, NULL, 0);
}

static void exec_copy(trace_event_id_t first, const char *copy, int round)
{
    fill_ring(first);
    pid_t child = fork();
    if (child == 0) {
        char argument[16];
        snprintf(argument, sizeof argument, "%d", round);
        execl(copy, copy, "image", argument, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0)
        printf("done %d %d\n", round, (int)child);
    else
        printf("failed %d\n", round);
}

static void load_library(trace_event_id_t first, const char *library, int round)
{
    fill_ring(first);
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    int (*fire)(int, int) =
        handle ? (int (*)(int, int))dlsym(handle, "gatedlib_fire_once_attached") : NULL;
    printf("loaded %d %d\n", round, fire ? fire(round, 3000) : 0);
}

static int flood_and_exec(void)
{
    if (pin_to_cpu0_in_real_time() != 0) {
        printf("no real-time priority\n");
        return 2;
    }
    trace_event_id_t first = named("first");
    named("second");
    printf("ready\n");
    fflush(stdout);
    char line[4200], path[4097];
    int round;
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "go %d %4096s", &round, path) == 2)
            exec_copy(first, path, round);
        else if (sscanf(line, "load %d %4096s", &round, path) == 2)
            load_library(first, path, round);
        else
            break;
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "image") == 0)
        return image(atoi(argv[2]));
    if (argc == 1)
        return flood_and_exec();
    fprintf(stderr, "usage: exec_under_flood | exec_under_flood image N\n");
    return 2;
}
