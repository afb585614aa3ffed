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

/* Where posix_trace_event's arguments sit, from its USDT note; set before
 * load, so the verifier prunes every other register. */
const volatile __u8 user_event_arg_regs[4] = {};
const volatile __s8 user_event_arg_sizes[4] = {};

/* Stream control, written by userspace while the programs run. */
volatile __u32 stream_running;
volatile __u32 primary_tgid; /* the process the stream was created for */
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
    return tgid == primary_tgid || bpf_map_lookup_elem(&traced_processes, &tgid) != NULL;
}

static __always_inline __u64 current_pthread_id(void)
{
#if defined(__TARGET_ARCH_x86)
    /* a trusted BTF pointer: a plain CO-RE load, no helper call */
    struct task_struct *task = bpf_get_current_task_btf();
    return task->thread.fsbase;
#else
    return 0;
#endif
}

/* A context load at a constant offset, written in asm: as C, clang folds the
 * switch below into one load at a computed offset, which the verifier
 * refuses for a context pointer. pt_regs is UAPI, its layout fixed. */
#define PT_REGS_LOAD(ctx, field)                                                   \
    ({                                                                             \
        __u64 __value;                                                             \
        asm volatile("%[value] = *(u64 *)(%[base] + %[offset])"                    \
                     : [value] "=r"(__value)                                       \
                     : [base] "r"(ctx), [offset] "i"(__builtin_offsetof(struct pt_regs, field))); \
        __value;                                                                   \
    })

static __always_inline __u64 register_value(struct pt_regs *ctx, __u8 reg)
{
#if defined(__TARGET_ARCH_x86)
    switch (reg) {
    case PT_REG_AX: return PT_REGS_LOAD(ctx, ax);
    case PT_REG_BX: return PT_REGS_LOAD(ctx, bx);
    case PT_REG_CX: return PT_REGS_LOAD(ctx, cx);
    case PT_REG_DX: return PT_REGS_LOAD(ctx, dx);
    case PT_REG_SI: return PT_REGS_LOAD(ctx, si);
    case PT_REG_DI: return PT_REGS_LOAD(ctx, di);
    case PT_REG_BP: return PT_REGS_LOAD(ctx, bp);
    case PT_REG_SP: return PT_REGS_LOAD(ctx, sp);
    case PT_REG_R8: return PT_REGS_LOAD(ctx, r8);
    case PT_REG_R9: return PT_REGS_LOAD(ctx, r9);
    case PT_REG_R10: return PT_REGS_LOAD(ctx, r10);
    case PT_REG_R11: return PT_REGS_LOAD(ctx, r11);
    case PT_REG_R12: return PT_REGS_LOAD(ctx, r12);
    case PT_REG_R13: return PT_REGS_LOAD(ctx, r13);
    case PT_REG_R14: return PT_REGS_LOAD(ctx, r14);
    case PT_REG_R15: return PT_REGS_LOAD(ctx, r15);
    }
#endif
    return 0;
}

static __always_inline __u64 sized(__u64 value, __s8 size)
{
    switch (size) {
    case 1: return (__u8)value;
    case -1: return (__s64)(__s8)value;
    case 2: return (__u16)value;
    case -2: return (__s64)(__s16)value;
    case 4: return (__u32)value;
    case -4: return (__s64)(__s32)value;
    }
    return value;
}

/* Argument `index` of posix_trace_event's probe: one load from pt_regs when
 * the note puts it in a register (bpf_usdt_arg costs a helper call or two). */
static __always_inline __u64 user_event_arg(struct pt_regs *ctx, int index)
{
    long value = 0;

    if (user_event_arg_regs[index] != PT_REG_NONE)
        return sized(register_value(ctx, user_event_arg_regs[index]), user_event_arg_sizes[index]);
    bpf_usdt_arg(ctx, index, &value);
    return value;
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
 * argument is the caller's address. Arguments are fetched only once the
 * cheap checks have passed: an untraced process or a stopped stream costs
 * the uprobe and two loads. */
SEC("usdt")
int user_event(struct pt_regs *ctx)
{
    __u64 now = bpf_ktime_get_ns();
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 zero = 0, cpu, event_id;
    struct pt_cpu_state *state;
    struct pt_record *record;
    __u64 data_len, copy_len;
    __u16 flags = 0;

    if (!stream_running || !process_traced(pid_tgid >> 32))
        return 0;
    event_id = user_event_arg(ctx, 0);
    if (event_filtered(event_id))
        return 0;
    state = bpf_map_lookup_elem(&cpu_states, &zero);
    if (!state)
        return 0;
    cpu = bpf_get_smp_processor_id();

    copy_len = data_len = user_event_arg(ctx, 2);
    if (copy_len > max_data_size) {
        copy_len = max_data_size;
        flags |= PT_RECORD_TRUNCATED;
    }
    copy_len &= PT_DATA_BOUND_MASK;
    if (copy_len && bpf_probe_read_user(state->staging + PT_RECORD_HEADER_SIZE, copy_len,
                                        (const void *)user_event_arg(ctx, 1)) != 0) {
        copy_len = 0;
        flags |= PT_RECORD_DATA_FAULT;
    }

    record = (struct pt_record *)state->staging;
    record->timestamp_ns = now;
    record->thread_id = current_pthread_id();
    record->prog_address = user_event_arg(ctx, 3);
    record->pid = pid_tgid >> 32;
    record->tid = (__u32)pid_tgid;
    record->event_id = event_id;
    record->data_len = copy_len;
    record->flags = flags;
    record->cpu = cpu;
    submit_staged(state, cpu, copy_len);
    return 0;
}
