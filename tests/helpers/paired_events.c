/* Names pair.foo and pair.bar, then emits N pairs (argv[1], default
 * 100000): foo i, then bar i at once (data: i as an int). A tracer that
 * never filters bar knows from it when each foo was made. */
#include <stdlib.h>
#include <trace.h>

int main(int argc, char **argv)
{
    int pairs = argc > 1 ? atoi(argv[1]) : 100000;
    trace_event_id_t foo, bar;
    if (posix_trace_eventid_open("pair.foo", &foo) != 0 ||
        posix_trace_eventid_open("pair.bar", &bar) != 0)
        return 1;
    for (int i = 0; i < pairs; ++i) {
        posix_trace_event(foo, &i, sizeof i);
        posix_trace_event(bar, &i, sizeof i);
    }
    return 0;
}
