/* A process whose posix_trace:event probe site is not libposixtrace's own:
 * as another build of the library would place it (another compiler, -O0,
 * a static copy), its arguments sit elsewhere. With PINNED_REGISTERS they
 * are in r12..r15; built without optimisation, on the stack. Names PREFIX.a
 * and PREFIX.b through libposixtrace (argv[1], default "other"), then emits
 * through its own site 5 times each: a's data "AAAA" + index, b's "BBBB" +
 * index. */
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>
#include <trace.h>

__attribute__((noinline)) static void other_build_event(trace_event_id_t id, const void *data,
                                                        size_t length)
{
#ifdef PINNED_REGISTERS
    register trace_event_id_t pinned_id asm("r12") = id; /* the sizes libposixtrace has */
    register const void *pinned_data asm("r13") = data;
    register size_t pinned_length asm("r14") = length;
    register void *pinned_caller asm("r15") = __builtin_return_address(0);
    STAP_PROBE4(posix_trace, event, pinned_id, pinned_data, pinned_length, pinned_caller);
#else
    void *caller = __builtin_return_address(0);
    STAP_PROBE4(posix_trace, event, id, data, length, caller);
#endif
}

int main(int argc, char **argv)
{
    const char *prefix = argc > 1 ? argv[1] : "other";
    trace_event_id_t ids[2];
    for (int i = 0; i < 2; ++i) {
        char name[64];
        snprintf(name, sizeof name, "%s.%c", prefix, 'a' + i);
        if (posix_trace_eventid_open(name, &ids[i]) != 0)
            return 1;
    }
    for (int i = 0; i < 10; ++i) {
        char data[5];
        memset(data, i % 2 ? 'B' : 'A', 4);
        data[4] = (char)('0' + i / 2);
        other_build_event(ids[i % 2], data, sizeof data);
    }
    return 0;
}
