/* The seed of usdt_notes_fuzzer (fuzz/make_corpus.sh builds it small): two
 * USDT probes with semaphores, and a symbol named like the user event table. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short seed_probe_semaphore __attribute__((section(".probes"))) = 0;
unsigned short seed_other_semaphore __attribute__((section(".probes"))) = 0;
char posix_trace_user_event_table[64] = "PTUE";
int seed(long a, long b, const char *s)
{
    STAP_PROBE3(seed, probe, a, b, s);
    DTRACE_PROBE2(seed, other, a, 42);
    return (int)a + posix_trace_user_event_table[0] + seed_probe_semaphore;
}
