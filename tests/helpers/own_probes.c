/* A program with its own USDT probes placed with <posix_trace/usdt.h>: one
 * guarded by a semaphore, one plain. It says "ready", waits for a line, fires
 * each probe 500 times (the guarded one only while its semaphore is raised),
 * reports how many guarded probes fired, waits for a line, exits.
 * `own_probes dlopen LIBRARY N` instead loads LIBRARY with dlopen after the
 * first line, says "loaded", waits for a line, fires its ownlib:fire probe N
 * times, says "fired", waits for a line, exits. */
#define POSIX_TRACE_USDT_SEMAPHORES
#include <posix_trace/usdt.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

POSIX_TRACE_USDT_SEMAPHORE(ownapp, guarded);
POSIX_TRACE_USDT_SEMAPHORE(ownapp, plain);

static int load_and_fire(const char *library, int count)
{
    char line[16];
    void *handle = dlopen(library, RTLD_NOW);
    if (!handle) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    int (*fire)(int) = (int (*)(int))dlsym(handle, "ownlib_fire");
    printf("loaded\n");
    fflush(stdout);
    if (!fire || !fgets(line, sizeof line, stdin))
        return 1;
    fire(count);
    printf("fired\n");
    fflush(stdout);
    return fgets(line, sizeof line, stdin) ? 0 : 1;
}

int main(int argc, char **argv)
{
    char line[16];
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    if (argc == 4 && strcmp(argv[1], "dlopen") == 0)
        return load_and_fire(argv[2], atoi(argv[3]));
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
