/* posix_trace/usdt.h -- extension: tracing the USDT probes of a process.
 *
 * A stream created for a process (posix_trace_create(pid, ...)) records the
 * USDT probes it is told to attach. Each PROVIDER:NAME is one event type,
 * named exactly "PROVIDER:NAME" as in the ELF note (e.g. "python:audit"),
 * with an id from POSIX_TRACE_USDT_EVENT_FIRST up. Its data is the probe's
 * arguments, each as a little-endian 64-bit value, in order (at most 12).
 * posix_trace_set_filter applies to these types like to any other.
 */
#ifndef POSIXTRACE_USDT_H
#define POSIXTRACE_USDT_H

#include <stddef.h>
#include <trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches the probes matching `probes` ("PROVIDER:NAME", "PROVIDER:*" or
 * "*") in every object the traced process maps now (its executable and its
 * shared libraries); semaphore-guarded probes are enabled while attached.
 * `attached` (may be NULL) receives the number of PROVIDER:NAME per object
 * attached. Returns 0; EINVAL (bad trid or NULL `probes`); ENOENT (no probe
 * matches); ESRCH (the process is gone); ENOSPC (no event type ids left). */
int posix_trace_usdt_attach(trace_id_t trid, const char *probes, size_t *attached);

/* Asks the kernel to copy, at each hit of the attached probe `probe`
 * ("PROVIDER:NAME"), the NUL-terminated string its argument `index` (from 0)
 * points to, up to POSIX_TRACE_USDT_STRING_MAX bytes with the NUL. The data
 * of such an event is then: the arguments (8 bytes each), the string with
 * its NUL, and one byte holding the number of arguments. Returns 0; EINVAL
 * (bad trid, NULL probe, index >= 12); ENOENT (probe not attached). */
#define POSIX_TRACE_USDT_STRING_MAX 64
int posix_trace_usdt_decode_string(trace_id_t trid, const char *probe, unsigned index);

#ifdef __cplusplus
}
#endif

#endif /* POSIXTRACE_USDT_H */
