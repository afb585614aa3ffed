/* A library the abuser loads a thousand copies of: each copy is another
 * file with its own USDT probe site, so each needs its own attachment. */
#include <posix_trace/usdt.h>

void abuselib_fire(int round)
{
    POSIX_TRACE_USDT(abuselib, fire, round);
}
