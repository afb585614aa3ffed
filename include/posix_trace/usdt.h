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

/* ---- Placing probes in an application ---------------------------------
 *
 *   #define POSIX_TRACE_USDT_SEMAPHORES   (optional, before this include:
 *                                          every probe of the file then has
 *                                          a semaphore)
 *   #include <posix_trace/usdt.h>
 *
 *   POSIX_TRACE_USDT_SEMAPHORE(myapp, request);      (file scope, once)
 *   ...
 *   if (POSIX_TRACE_USDT_ENABLED(myapp, request))     (skip argument work
 *       POSIX_TRACE_USDT(myapp, request, id, size);    while untraced)
 *
 * POSIX_TRACE_USDT(provider, name, args...) takes up to 12 arguments and is
 * a standard <sys/sdt.h> probe: posixtrace, bpftrace, perf and gdb all see
 * it. Its event type in a stream is "provider:name". The macros need
 * <sys/sdt.h> (Debian package systemtap-sdt-dev); the functions below do not.
 */
#if defined(__has_include) && __has_include(<sys/sdt.h>)
#ifdef POSIX_TRACE_USDT_SEMAPHORES
#define _SDT_HAS_SEMAPHORES 1
#endif
#ifndef SDT_USE_VARIADIC
#define SDT_USE_VARIADIC 1
#endif
#include <sys/sdt.h>

#define POSIX_TRACE_USDT(...) STAP_PROBEV(__VA_ARGS__)
#define POSIX_TRACE_USDT_SEMAPHORE(provider, name)                                                 \
    __extension__ unsigned short provider##_##name##_semaphore                                      \
        __attribute__((unused, section(".probes")))
#define POSIX_TRACE_USDT_ENABLED(provider, name)                                                   \
    __builtin_expect(provider##_##name##_semaphore != 0, 0)
#endif /* <sys/sdt.h> */

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches the probes matching `probes` ("PROVIDER:NAME", "PROVIDER:*" or
 * "*") in every object the traced process maps now (its executable and its
 * shared libraries); semaphore-guarded probes are enabled while attached.
 * "*" leaves out libposixtrace's own provider, posix_trace: its probes are
 * how user events and their names reach the stream already.
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

/* The objects a traced process loaded after the stream was created (exec,
 * dlopen) whose probes the stream could not all attach: their events are
 * not recorded. `first_error` says why: EMFILE (out of descriptors), ENOSPC
 * (the stream's POSIX_TRACE_USDT_MAX_SITES probe sites, or its event type
 * ids, are used up, or the process maps more than
 * POSIX_TRACE_USDT_MAX_OBJECTS executable files: the others, counted as
 * one, are not looked at), or the kernel's error. Either pointer may be
 * NULL. Returns 0; EINVAL (bad trid). */
#define POSIX_TRACE_USDT_MAX_SITES 4096
#define POSIX_TRACE_USDT_MAX_OBJECTS 4096
int posix_trace_usdt_unattached(trace_id_t trid, size_t *objects, int *first_error);

#ifdef __cplusplus
}
#endif

#endif /* POSIXTRACE_USDT_H */
