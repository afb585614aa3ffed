/* A library with a posix_trace:eventid_open probe site, as libposixtrace
 * has (a tracer attaches its naming probe in every object with one), and
 * 10,000 more sites of another probe, never fired: a notes section of most
 * of a megabyte, which takes a reader a while to walk. */
#include <posix_trace/usdt.h>

#define TEN(x) x x x x x x x x x x

void abuselib_fire(int round)
{
    POSIX_TRACE_USDT(posix_trace, eventid_open, round, 0);
    if (round < 0) {
        TEN(TEN(TEN(TEN(POSIX_TRACE_USDT(manynotes, idle, round);))))
    }
}
