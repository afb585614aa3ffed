/* Traces its own process after moving to another directory, so that a
 * relative path the library may have been loaded by no longer leads to it:
 * creates and starts a stream of itself, emits three user events, stops,
 * and prints "semaphore S events N": whether posix_trace_event()'s
 * semaphore was raised (the uprobe path, not the lanes) and how many of
 * its events it read back. It names the semaphore, as a program that asks
 * whether it is traced would: the link gives it a copy of its own (a copy
 * relocation), which the kernel never raises. */
#include <dlfcn.h>
#include <stdio.h>
#include <trace.h>
#include <unistd.h>

#include "helpers.h"

extern unsigned short posix_trace_event_semaphore;

int main(void)
{
    if (chdir("/") != 0)
        return 2;
    trace_id_t trid;
    if (posix_trace_create(0, NULL, &trid) != 0)
        return 3;
    filter_thread_events(trid);
    trace_event_id_t hello;
    posix_trace_eventid_open("self_tracer.hello", &hello);
    posix_trace_start(trid);
    /* The library's own, looked up in it rather than linked. */
    void *library = dlopen("libposixtrace.so.1", RTLD_NOW | RTLD_NOLOAD);
    const unsigned short *semaphore =
        library ? dlsym(library, "posix_trace_event_semaphore") : NULL;
    int raised = semaphore && *semaphore != 0;
    for (int i = 0; i < 3; ++i)
        posix_trace_event(hello, &i, sizeof i);
    posix_trace_stop(trid);
    int events = 0;
    for (;;) {
        struct posix_trace_event_info info;
        char data[64];
        size_t len;
        int unavailable;
        if (posix_trace_trygetnext_event(trid, &info, data, sizeof data, &len, &unavailable) ||
            unavailable)
            break;
        events += info.posix_event_id == hello;
    }
    if (&posix_trace_event_semaphore == semaphore) {
        printf("linked without a copy of the semaphore: nothing to show\n");
        return 5;
    }
    printf("semaphore %d events %d\n", raised, events);
    posix_trace_shutdown(trid);
    if (library)
        dlclose(library);
    return 0;
}
