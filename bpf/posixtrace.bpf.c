// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The kernel half of a posixtrace stream. One instance of this object is
 * loaded per stream; userspace steers it through the globals below (mmapped
 * .bss) and reads what it records from one BPF ring buffer per CPU.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "posixtrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* One BPF ring buffer per CPU, indexed by CPU id. Userspace creates the rings
 * (their size is a stream attribute) and hands the first one to libbpf as
 * the inner map template before loading. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} rings SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PT_MAX_TRACED_PROCESSES);
    __type(key, __u32);   /* tgid */
    __type(value, __u32); /* unused */
} traced_processes SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pt_cpu_state);
} cpu_states SEC(".maps");

/* Stream control, written by userspace while the programs run. */
volatile __u32 stream_running;
volatile __u32 max_data_size;
volatile __u64 wakeup_threshold; /* bytes pending in a ring before a wakeup */
volatile __u64 event_filter[PT_FILTER_WORDS]; /* set bit: event type filtered out */

static __always_inline bool event_filtered(__u32 event_id)
{
    __u64 word = event_id / 64;

    /* the verifier loses the bound when clang checks a copy of the
     * register; the empty asm makes the check apply to `word` itself */
    asm volatile("" : "+r"(word));
    if (word >= PT_FILTER_WORDS)
        return true;
    return event_filter[word] & (1ull << (event_id % 64));
}

static __always_inline bool process_traced(__u32 tgid)
{
    return bpf_map_lookup_elem(&traced_processes, &tgid) != NULL;
}

static __always_inline __u64 current_pthread_id(void)
{
#if defined(__TARGET_ARCH_x86)
    struct task_struct *task = bpf_get_current_task_btf();
    return BPF_CORE_READ(task, thread.fsbase);
#else
    return 0;
#endif
}

/* Copies the staged record into this CPU's ring; a record that finds no room
 * is counted, and the count rides on the next record that gets through. */
static __always_inline void submit_staged(struct pt_cpu_state *state, __u32 cpu, __u64 data_len)
{
    struct pt_record *record = (struct pt_record *)state->staging;
    void *ring = bpf_map_lookup_elem(&rings, &cpu);
    __u64 wakeup;

    if (!ring)
        return;
    wakeup = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_threshold
                 ? BPF_RB_FORCE_WAKEUP
                 : BPF_RB_NO_WAKEUP;
    record->lost_before = state->lost_unreported;
    data_len &= PT_DATA_BOUND_MASK;
    if (bpf_ringbuf_output(ring, record, PT_RECORD_HEADER_SIZE + data_len, wakeup) == 0) {
        state->lost_unreported = 0;
    } else {
        state->lost_total++;
        state->lost_unreported++;
    }
}

/* posix_trace_event(event_id, data, data_len) in libposixtrace; the fourth
 * argument is the caller's address. */
SEC("usdt")
int BPF_USDT(user_event, __u32 event_id, const void *data, __u64 data_len, __u64 caller)
{
    __u64 now = bpf_ktime_get_ns();
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 zero = 0, cpu;
    struct pt_cpu_state *state;
    struct pt_record *record;
    __u64 copy_len = data_len;
    __u16 flags = 0;

    if (!stream_running || !process_traced(pid_tgid >> 32) || event_filtered(event_id))
        return 0;
    state = bpf_map_lookup_elem(&cpu_states, &zero);
    if (!state)
        return 0;
    cpu = bpf_get_smp_processor_id();

    if (copy_len > max_data_size) {
        copy_len = max_data_size;
        flags |= PT_RECORD_TRUNCATED;
    }
    copy_len &= PT_DATA_BOUND_MASK;
    if (copy_len &&
        bpf_probe_read_user(state->staging + PT_RECORD_HEADER_SIZE, copy_len, data) != 0) {
        copy_len = 0;
        flags |= PT_RECORD_DATA_FAULT;
    }

    record = (struct pt_record *)state->staging;
    record->timestamp_ns = now;
    record->thread_id = current_pthread_id();
    record->prog_address = caller;
    record->pid = pid_tgid >> 32;
    record->tid = (__u32)pid_tgid;
    record->event_id = event_id;
    record->data_len = copy_len;
    record->flags = flags;
    record->cpu = cpu;
    submit_staged(state, cpu, copy_len);
    return 0;
}
