/* A shared library whose probe is guarded by a semaphore: the program that
 * loads it can wait until a tracer has attached the probe. */
#define POSIX_TRACE_USDT_SEMAPHORES
#include <posix_trace/usdt.h>
#include <unistd.h>

POSIX_TRACE_USDT_SEMAPHORE(gatedlib, fire);

/* Waits up to `wait_ms` for the probe to be attached, then 100 ms more (a
 * tracer attaches before it drains what was recorded meanwhile: this leaves
 * it the time to make room), and fires it once (argument: `value`); 1 if it
 * fired. */
int gatedlib_fire_once_attached(int value, int wait_ms)
{
    for (int waited_ms = 0; !POSIX_TRACE_USDT_ENABLED(gatedlib, fire) && waited_ms < wait_ms;
         ++waited_ms)
        usleep(1000);
    if (!POSIX_TRACE_USDT_ENABLED(gatedlib, fire))
        return 0;
    usleep(100000);
    POSIX_TRACE_USDT(gatedlib, fire, value);
    return 1;
}
