// posix_trace_event() is a USDT probe site (provider posix_trace, name
// event) guarded by its semaphore: the kernel raises the semaphore in every
// process a stream traces by pid. A stream of the calling process takes its
// events from the process's lanes instead (emit/lanes.hpp). Untraced, a call
// costs two loads and two branches; one the lanes' stream filters out, two
// more.
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include <trace.h>

#include <cerrno>
#include <cstring>

#include "emit/lanes.hpp"
#include "events/event_names.hpp"
#include "util/export.hpp"

// Named as <sys/sdt.h> expects; exported so tracers can find it by symbol.
// The probe site reads it through a name of the library's own: a program
// that names the exported one gets a copy of it from the linker (a copy
// relocation) that the kernel, which raises the library's, never raises, and
// the site would read that copy and never fire.
extern "C" {
__attribute__((visibility("default"),
               section(".probes"))) unsigned short posix_trace_event_semaphore;
extern unsigned short posixtrace_own_event_semaphore
    __attribute__((visibility("hidden"), alias("posix_trace_event_semaphore")));
}

POSIXTRACE_EXPORT __attribute__((noinline)) void
posix_trace_event(trace_event_id_t event_id, const void *__restrict data, size_t data_len)
{
    if (__builtin_expect(posixtrace_own_event_semaphore != 0, 0)) {
        // The BPF program reads: id, data pointer, length, caller address.
        // The caller's address is forced into a register: as a stack operand
        // it would cost the BPF side a user memory read per event.
        void *caller = __builtin_return_address(0);
        asm volatile("" : "+r"(caller));
        STAP_PROBE4(posix_trace, event, event_id, data, data_len, caller);
    }
    // A stream of this process takes its events here, without the trap
    // (the probe above stays for the tracers of other processes).
    const posixtrace::LaneGate &gate = posixtrace::lane_gate;
    if (__builtin_expect(gate.open.load(std::memory_order_relaxed) != 0, 0) &&
        !gate.shut_for(event_id))
        posixtrace::emit_to_lanes(event_id, data, data_len, __builtin_return_address(0));
}

POSIXTRACE_EXPORT int posix_trace_eventid_open(const char *__restrict name,
                                               trace_event_id_t *__restrict id)
{
    if (!name || !id)
        return EINVAL;
    return posixtrace::UserEventRegistry::instance().open(name, *id);
}
