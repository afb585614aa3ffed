// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The kernel half of a posixtrace stream. One instance of this object is
 * loaded per stream; userspace steers it through the globals below (mmapped
 * .bss) and reads what it records from one BPF ring buffer per CPU.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "posixtrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* In the order they build on each other. */
#include "stream.bpf.h"
#include "usdt_args.bpf.h"
#include "user_events.bpf.h"
#include "thread_events.bpf.h"
#include "thread_event_programs.bpf.h"
#include "lifecycle.bpf.h"
