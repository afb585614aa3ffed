/* A shared library with its own USDT probe, loaded with dlopen by
 * own_probes: its probe exists only once the library is mapped. */
#include <posix_trace/usdt.h>

int ownlib_fire(int count)
{
    for (int i = 0; i < count; ++i)
        POSIX_TRACE_USDT(ownlib, fire, i);
    return count;
}
