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
#define BPF_USDT_MAX_SPEC_CNT PT_USDT_MAX_SITES
#include <bpf/usdt.bpf.h>

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

/* One entry per CPU (max_entries set at load), mmapped by userspace. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pt_cpu_state);
} cpu_states SEC(".maps");

/* Where posix_trace_event's arguments sit, from its USDT note; set before
 * load, so the verifier prunes every other register. */
const volatile __u8 user_event_arg_regs[4] = {};
const volatile __s8 user_event_arg_sizes[4] = {};

/* Stream control, written by userspace while the programs run. */
volatile __u32 stream_state; /* enum pt_stream_state */
volatile __u32 primary_tgid; /* the process the stream was created for */
/* POSIX_TRACE_INHERITED: a traced process's children are traced too, from
 * their first instruction (decided at fork, before the child can run). */
volatile __u32 inherit_children;
/* Set once traced_processes has held an entry (never cleared: cheap to keep). */
volatile __u32 other_processes_traced;
volatile __u32 max_data_size;
volatile __u64 wakeup_threshold; /* bytes pending in a ring before a wakeup */
volatile __u64 event_filter[PT_FILTER_WORDS]; /* set bit: event type filtered out */
/* Per USDT event type: 1 + the index of an argument that points to a string
 * to copy after the arguments, or 0. */
volatile __u8 usdt_string_arg[PT_USDT_TYPES];

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
    /* the hash is looked up only once a traced process has had children */
    return tgid == primary_tgid ||
           (other_processes_traced && bpf_map_lookup_elem(&traced_processes, &tgid) != NULL);
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

/* The drain thread polls every millisecond; it is woken early only when a
 * ring passes the threshold. Asking the ring its fill level is a helper call,
 * so small records ask every 64th time (the increment may race with a
 * preempting program: it only paces the check). */
static __always_inline __u64 wakeup_flag(void *ring, struct pt_cpu_state *state, __u64 room)
{
    if (room < 1024 && (++state->records & 63) != 0)
        return BPF_RB_NO_WAKEUP;
    return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_threshold ? BPF_RB_FORCE_WAKEUP
                                                                          : BPF_RB_NO_WAKEUP;
}

/* This CPU's ring and counters. */
struct cpu_slot {
    void *ring;
    struct pt_cpu_state *state;
    __u32 cpu;
};

static __always_inline bool this_cpu_slot(struct cpu_slot *slot)
{
    slot->cpu = bpf_get_smp_processor_id();
    slot->state = bpf_map_lookup_elem(&cpu_states, &slot->cpu);
    slot->ring = bpf_map_lookup_elem(&rings, &slot->cpu);
    return slot->state && slot->ring;
}

/* Reserves a record of `size` bytes (a constant at every call site), then
 * stamps it. The stamp is taken after the reservation: a record reserved
 * after the reader looked at the ring's producer position is stamped after
 * that look, which is what the merge's bound relies on. The state and the
 * filter are read again after the stamp: a record stamped after
 * posix_trace_stop() or a filter change took effect is discarded, so every
 * recorded event precedes the stop or filter event that excludes it.
 * NULL: no room (counted as lost), or the stream stopped or filtered the
 * event meanwhile. */
static __always_inline struct pt_record *begin_record(struct cpu_slot *slot, __u64 size,
                                                      __u32 event_id)
{
    struct pt_record *record = bpf_ringbuf_reserve(slot->ring, size, 0);
    __u32 state_now;

    if (!record) {
        __sync_fetch_and_add(&slot->state->lost, 1);
        return NULL;
    }
    record->timestamp_ns = bpf_ktime_get_ns();
    state_now = stream_state;
    if (state_now != PT_STREAM_RUNNING || event_filtered(event_id)) {
        if (state_now == PT_STREAM_FULL && !event_filtered(event_id))
            __sync_fetch_and_add(&slot->state->refused_full, 1);
        bpf_ringbuf_discard(record, BPF_RB_NO_WAKEUP);
        return NULL;
    }
    return record;
}

struct user_event_args {
    struct pt_regs *ctx;
    struct cpu_slot slot;
    __u64 pid_tgid;
    __u64 copy_len;
    __u32 event_id;
    __u16 flags;
};

/* Writes the record straight into the ring (no staging copy a preempting
 * program could overwrite). */
static __always_inline void record_user_event(struct user_event_args *a, const __u64 room)
{
    __u64 wakeup = wakeup_flag(a->slot.ring, a->slot.state, room);
    struct pt_record *record = begin_record(&a->slot, PT_RECORD_HEADER_SIZE + room, a->event_id);
    __u64 copy_len = a->copy_len;
    __u16 flags = a->flags;

    if (!record)
        return;
    if (room) {
        asm volatile("" : "+r"(copy_len)); /* keep the bound on this register */
        if (copy_len > room)
            copy_len = room;
        if (copy_len && bpf_probe_read_user(record->data, copy_len,
                                            (const void *)user_event_arg(a->ctx, 1)) != 0) {
            copy_len = 0;
            flags |= PT_RECORD_DATA_FAULT;
        }
    } else {
        copy_len = 0;
    }
    record->thread_id = current_pthread_id();
    record->prog_address = user_event_arg(a->ctx, 3);
    record->pid = a->pid_tgid >> 32;
    record->tid = (__u32)a->pid_tgid;
    record->event_id = a->event_id;
    record->data_len = copy_len;
    record->reserved = 0;
    record->flags = flags;
    record->cpu = a->slot.cpu;
    bpf_ringbuf_submit(record, wakeup);
}

/* posix_trace_event(event_id, data, data_len) in libposixtrace; the fourth
 * argument is the caller's address. Arguments are fetched only once the
 * cheap checks have passed: an untraced process or a stopped stream costs
 * the uprobe and two loads. */
SEC("usdt")
int user_event(struct pt_regs *ctx)
{
    __u32 state_now = stream_state;
    struct user_event_args a = {.ctx = ctx};
    __u64 data_len;

    if (state_now == PT_STREAM_SUSPENDED)
        return 0;
    a.pid_tgid = bpf_get_current_pid_tgid();
    if (!process_traced(a.pid_tgid >> 32))
        return 0;
    a.event_id = user_event_arg(ctx, 0);
    /* user event ids only: a system event id would forge the stream's own */
    if (a.event_id < PT_EVENT_USER_FIRST || a.event_id >= PT_EVENT_USDT_FIRST ||
        event_filtered(a.event_id))
        return 0;
    if (!this_cpu_slot(&a.slot))
        return 0;
    if (state_now == PT_STREAM_FULL) {
        __sync_fetch_and_add(&a.slot.state->refused_full, 1);
        return 0;
    }

    a.copy_len = data_len = user_event_arg(ctx, 2);
    if (data_len > max_data_size) {
        a.copy_len = max_data_size;
        a.flags |= PT_RECORD_TRUNCATED;
    }
    if (a.copy_len == 0)
        record_user_event(&a, 0);
    else if (a.copy_len <= 16)
        record_user_event(&a, 16);
    else if (a.copy_len <= 64)
        record_user_event(&a, 64);
    else if (a.copy_len <= 256)
        record_user_event(&a, 256);
    else if (a.copy_len <= 1024)
        record_user_event(&a, 1024);
    else if (a.copy_len <= 4096)
        record_user_event(&a, 4096);
    else
        record_user_event(&a, PT_DATA_SIZE_LIMIT);
    return 0;
}

static __always_inline __u8 usdt_string_argument(__u32 event_id)
{
    __u64 type = event_id - 2048;

    asm volatile("" : "+r"(type)); /* bound this register, not a copy */
    return type < PT_USDT_TYPES ? usdt_string_arg[type] : 0;
}

/* Any USDT probe of a traced process. The stream gives each PROVIDER:NAME an
 * event type id and attaches with it as the BPF cookie; the payload is the
 * probe's arguments, each a little-endian 64-bit value, in order. */
SEC("usdt")
int usdt_event(struct pt_regs *ctx)
{
    __u32 state_now = stream_state, event_id;
    struct cpu_slot slot;
    struct pt_record *record;
    __u64 pid_tgid, wakeup, data_len;
    int count;
    __u8 string_arg;

    if (state_now == PT_STREAM_SUSPENDED)
        return 0;
    pid_tgid = bpf_get_current_pid_tgid();
    if (!process_traced(pid_tgid >> 32))
        return 0;
    event_id = (__u32)bpf_usdt_cookie(ctx);
    if (event_filtered(event_id))
        return 0;
    if (!this_cpu_slot(&slot))
        return 0;
    if (state_now == PT_STREAM_FULL) {
        __sync_fetch_and_add(&slot.state->refused_full, 1);
        return 0;
    }

    wakeup = wakeup_flag(slot.ring, slot.state, 0);
    record = begin_record(&slot, PT_RECORD_HEADER_SIZE + PT_USDT_MAX_ARGS * 8 + PT_USDT_STRING_MAX + 8,
                          event_id);
    if (!record)
        return 0;
    count = bpf_usdt_arg_cnt(ctx);
    if (count < 0)
        count = 0;
    for (int i = 0; i < PT_USDT_MAX_ARGS; i++) {
        long value = 0;
        if (i >= count)
            break;
        bpf_usdt_arg(ctx, i, &value);
        __builtin_memcpy(record->data + i * 8, &value, 8);
    }
    data_len = (__u64)count * 8;
    asm volatile("" : "+r"(data_len)); /* bound this register, not a copy */
    if (data_len > PT_USDT_MAX_ARGS * 8)
        data_len = PT_USDT_MAX_ARGS * 8;
    string_arg = usdt_string_argument(event_id);
    if (string_arg && string_arg * 8 <= data_len) {
        /* [arguments][the string, NUL included][argument count: 1 byte] */
        __u64 pointer, args_len = data_len;
        long copied;

        __builtin_memcpy(&pointer, record->data + ((string_arg - 1) & 15) * 8, 8);
        copied = bpf_probe_read_user_str(record->data + data_len, PT_USDT_STRING_MAX,
                                         (const void *)pointer);
        if (copied <= 0) {
            record->data[data_len] = 0; /* unreadable: an empty string */
            copied = 1;
        }
        data_len += copied;
        asm volatile("" : "+r"(data_len));
        if (data_len > PT_USDT_MAX_ARGS * 8 + PT_USDT_STRING_MAX)
            data_len = PT_USDT_MAX_ARGS * 8 + PT_USDT_STRING_MAX;
        record->data[data_len] = args_len / 8;
        data_len += 1;
    }
    record->thread_id = current_pthread_id();
    record->prog_address = PT_REGS_IP(ctx);
    record->pid = pid_tgid >> 32;
    record->tid = (__u32)pid_tgid;
    record->event_id = event_id;
    record->data_len = data_len;
    record->reserved = 0;
    record->flags = 0;
    record->cpu = slot.cpu;
    bpf_ringbuf_submit(record, wakeup);
    return 0;
}

/* ---- thread events (TD_*) ------------------------------------------------
 * The libc_db thread event facility, generated from the scheduler, signal
 * and futex tracepoints for the threads of the traced processes. What each
 * event means, and its data, is defined in <posix_trace/thread_db.h>.
 */

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PT_MAX_TD_THREADS);
    __type(key, __u32); /* tid */
    __type(value, struct pt_td_thread);
} td_threads SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PT_MAX_TRACED_PROCESSES);
    __type(key, __u32); /* tgid */
    __type(value, struct pt_td_process);
} td_processes SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, PT_MAX_TD_THREADS);
    __type(key, __u32); /* tid */
    __type(value, struct pt_td_message);
} td_messages SEC(".maps");

/* The futex a thread entered a wait on, for td_timeout at the exit. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PT_MAX_TD_THREADS);
    __type(key, __u32); /* tid */
    __type(value, __u64);
} futex_waits SEC(".maps");

/* The seed's rule, when a thread agent controls the process: reported if
 * and only if the thread has reporting enabled and the type is in its mask
 * or in the global mask; the thread's message buffer then keeps it. With no
 * agent, every thread reports (the stream's filter alone decides). */
/* The inode number of the task's pidfd: which thread holds its tid, where
 * the tid alone may name an earlier thread. 0 once the task released its tid
 * (exit clears thread_pid) or where the kernel has no pidfs. */
static __always_inline __u64 thread_identity(struct task_struct *task)
{
    if (!bpf_core_field_exists(struct pid, ino))
        return 0;
    return BPF_CORE_READ(task, thread_pid, ino);
}

/* Whether the table's entry for a tid is about `task` rather than an earlier
 * holder of the tid (NULL: a thread known only by its tid, taken as the
 * entry's). */
static __always_inline bool td_entry_is_of(const struct pt_td_thread *entry,
                                           struct task_struct *task)
{
    __u64 identity;

    if (!task || entry->identity == 0)
        return true;
    identity = thread_identity(task);
    if (identity != 0)
        return entry->identity == identity;
    return entry->exited_start == (BPF_CORE_READ(task, start_time) | 1);
}

static __always_inline bool td_wanted(__u32 tgid, __u32 tid, struct task_struct *task, __u32 type,
                                      bool *has_agent)
{
    struct pt_td_process *process = bpf_map_lookup_elem(&td_processes, &tgid);
    struct pt_td_thread *thread;
    __u32 bit = 1u << ((type - 1) & 31);

    *has_agent = process != NULL;
    if (!process)
        return true;
    thread = bpf_map_lookup_elem(&td_threads, &tid);
    return thread && thread->enabled && ((thread->mask | process->global_mask) & bit) &&
           td_entry_is_of(thread, task);
}

static __always_inline bool td_reported(struct task_struct *task, __u32 tgid, __u32 tid, __u32 type,
                                        __u64 value)
{
    struct pt_td_message message = {};
    bool has_agent;

    if (!td_wanted(tgid, tid, task, type, &has_agent))
        return false;
    if (has_agent) {
        message.tgid = tgid;
        message.event = type;
        message.data = value;
        bpf_map_update_elem(&td_messages, &tid, &message, BPF_ANY);
    }
    return true;
}

static __always_inline __u64 task_pthread_id(struct task_struct *task)
{
#if defined(__TARGET_ARCH_x86)
    return BPF_CORE_READ(task, thread.fsbase);
#else
    return 0;
#endif
}

/* A task's field: a plain load through a trusted BTF pointer (tp_btf), a
 * CO-RE probe read through the raw pointer a raw tracepoint passes. `trusted`
 * is a constant in every caller, so only one of the two is compiled. */
#define TASK_FIELD(task, field, trusted) ((trusted) ? (task)->field : BPF_CORE_READ(task, field))

/* Records TD event `type` about `task`, a thread of a traced process.
 * `with_user_regs`: the task is a trusted pointer, so its user registers
 * (the address it was at) can be read; raw tracepoints record 0 there. */
static __always_inline void td_emit_body(struct task_struct *task, __u32 type, __u64 value,
                                         __u64 value2, const bool with_user_regs)
{
    __u32 event_id = PT_TD_EVENT_ID_FIRST + type - 1, state_now = stream_state;
    __u32 tgid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
    struct cpu_slot slot;
    struct pt_record *record;
    struct pt_td_data *data;
    struct pt_regs *user_regs;
    __u64 wakeup;

    if (state_now == PT_STREAM_SUSPENDED || !td_reported(task, tgid, tid, type, value) ||
        event_filtered(event_id))
        return;
    if (!this_cpu_slot(&slot))
        return;
    if (state_now == PT_STREAM_FULL) {
        __sync_fetch_and_add(&slot.state->refused_full, 1);
        return;
    }
    wakeup = wakeup_flag(slot.ring, slot.state, 0);
    record = begin_record(&slot, PT_RECORD_HEADER_SIZE + sizeof(struct pt_td_data), event_id);
    if (!record)
        return;
    data = (struct pt_td_data *)record->data;
    data->tid = tid;
    data->cpu = slot.cpu;
    data->pthread_id = task_pthread_id(task);
    data->value = value;
    data->value2 = value2;
    BPF_CORE_READ_STR_INTO(&data->name, task, comm);
    user_regs = with_user_regs ? (struct pt_regs *)bpf_task_pt_regs(task) : NULL;
    record->thread_id = data->pthread_id;
    record->prog_address = user_regs ? BPF_CORE_READ(user_regs, ip) : 0;
    record->pid = tgid;
    record->tid = tid;
    record->event_id = event_id;
    record->data_len = sizeof(struct pt_td_data);
    record->reserved = 0;
    record->flags = 0;
    record->cpu = slot.cpu;
    bpf_ringbuf_submit(record, wakeup);
}

/* Subprograms, not inlined: the scheduler programs call them several times. */
static __noinline void td_emit(struct task_struct *task, __u32 type, __u64 value, __u64 value2)
{
    td_emit_body(task, type, value, value2, true);
}

static __noinline void td_emit_raw(struct task_struct *task, __u32 type, __u64 value, __u64 value2)
{
    td_emit_body(task, type, value, value2, false);
}

#define TD_EMIT(trusted, task, type, value, value2)                                                \
    ((trusted) ? td_emit(task, type, value, value2) : td_emit_raw(task, type, value, value2))

/* Runs for every context switch of the system while a stream runs: with a
 * trusted pointer its fields are plain loads, no helper call. */
static __always_inline bool thread_traced(struct task_struct *task, const bool trusted)
{
    /* pid 0 is a CPU's idle task, never a traced thread */
    return TASK_FIELD(task, pid, trusted) != 0 && process_traced(TASK_FIELD(task, tgid, trusted));
}

/* The current task: a trusted pointer for tp_btf programs, a raw one for
 * raw tracepoints. */
static __always_inline struct task_struct *current_task(const bool trusted)
{
    return trusted ? bpf_get_current_task_btf() : (struct task_struct *)bpf_get_current_task();
}

/*
 * Each kernel event has two entry points with one body: SEC("tp_btf/...")
 * (BTF-typed arguments, plain loads) and SEC("raw_tp/...") for kernels whose
 * BTF lacks that tracepoint's type. Userspace loads one of the two.
 */
/* Reports, in the ring, that `lost` thread events of thread `tid` could not
 * be recorded because the kernel switched without firing sched_switch: an
 * overflow record about that thread, placed before its next event (the
 * reader adds the resume event). Counted in the CPU's state instead when it
 * cannot be written. */
static __always_inline void report_unreported(struct pt_cpu_state *cpu_state, __u32 tgid, __u32 tid,
                                              __u64 pthread_id, __u64 lost)
{
    __u32 state_now = stream_state;
    struct cpu_slot slot;
    struct pt_record *record;
    __u64 *data;

    if (!lost || state_now == PT_STREAM_SUSPENDED)
        return;
    if (state_now == PT_STREAM_FULL) {
        __sync_fetch_and_add(&cpu_state->refused_full, lost);
        return;
    }
    record = NULL;
    if (!event_filtered(PT_EVENT_OVERFLOW) && this_cpu_slot(&slot))
        record = bpf_ringbuf_reserve(slot.ring, PT_RECORD_HEADER_SIZE + 24, 0);
    if (!record) {
        __sync_fetch_and_add(&cpu_state->unreported_switches, lost);
        return;
    }
    record->timestamp_ns = bpf_ktime_get_ns();
    state_now = stream_state;
    if (state_now != PT_STREAM_RUNNING || event_filtered(PT_EVENT_OVERFLOW)) {
        /* changed meanwhile: as the checks above would have decided */
        if (state_now == PT_STREAM_FULL)
            __sync_fetch_and_add(&cpu_state->refused_full, lost);
        else if (state_now == PT_STREAM_RUNNING)
            __sync_fetch_and_add(&cpu_state->unreported_switches, lost);
        bpf_ringbuf_discard(record, BPF_RB_NO_WAKEUP);
        return;
    }
    data = (__u64 *)record->data;
    data[0] = lost; /* struct posix_trace_overflow_data: lost, in kernel, in stream */
    data[1] = lost;
    data[2] = 0;
    record->thread_id = pthread_id;
    record->prog_address = 0;
    record->pid = tgid;
    record->tid = tid;
    record->event_id = PT_EVENT_OVERFLOW;
    record->data_len = 24;
    record->reserved = 0;
    record->flags = 0;
    record->cpu = slot.cpu;
    bpf_ringbuf_submit(record, BPF_RB_NO_WAKEUP);
}

static __always_inline __u64 td_recordable(__u32 tgid, __u32 tid, struct task_struct *task,
                                           __u32 type)
{
    bool has_agent;

    return td_wanted(tgid, tid, task, type, &has_agent) &&
           !event_filtered(PT_TD_EVENT_ID_FIRST + type - 1);
}

/* Each CPU's switches form a chain: a switch's `prev` is the previous
 * switch's `next`. Where it is not, the kernel switched without firing
 * sched_switch (this happens on some kernels; ftrace shows the same holes):
 * `prev` was switched in, and the task last switched to was switched out,
 * unseen. The events the stream would have recorded there are reported as
 * lost, before the thread's next event, not silently missing. */
static __always_inline void check_switch_chain(struct task_struct *prev, struct task_struct *next,
                                               const bool trusted)
{
    __u32 cpu = bpf_get_smp_processor_id(), prev_tid = TASK_FIELD(prev, pid, trusted);
    struct pt_cpu_state *cpu_state = bpf_map_lookup_elem(&cpu_states, &cpu);

    if (!cpu_state)
        return;
    if (cpu_state->switch_seen && cpu_state->last_next_tid != prev_tid) {
        __u32 hidden_tgid = cpu_state->last_next_tgid, hidden_tid = cpu_state->last_next_tid;
        __u32 prev_tgid = TASK_FIELD(prev, tgid, trusted);

        /* switched out unseen: td_switchfrom, td_sleep or td_preempt, and
         * td_idle if the CPU went idle then */
        if (hidden_tid != 0 && process_traced(hidden_tgid))
            report_unreported(cpu_state, hidden_tgid, hidden_tid, 0,
                              td_recordable(hidden_tgid, hidden_tid, NULL, PT_TD_SWITCHFROM) +
                                  (td_recordable(hidden_tgid, hidden_tid, NULL, PT_TD_SLEEP) ||
                                   td_recordable(hidden_tgid, hidden_tid, NULL, PT_TD_PREEMPT)) +
                                  (prev_tid == 0 && td_recordable(hidden_tgid, hidden_tid, NULL, PT_TD_IDLE)));
        if (thread_traced(prev, trusted))
            report_unreported(cpu_state, prev_tgid, prev_tid, task_pthread_id(prev),
                              td_recordable(prev_tgid, prev_tid, prev, PT_TD_SWITCHTO));
    }
    cpu_state->last_next_tid = TASK_FIELD(next, pid, trusted);
    cpu_state->last_next_tgid = TASK_FIELD(next, tgid, trusted);
    cpu_state->switch_seen = 1;
}

static __always_inline int on_sched_switch(bool preempt, struct task_struct *prev,
                                           struct task_struct *next, unsigned int prev_state,
                                           const bool trusted)
{
    __u32 next_tid;

    check_switch_chain(prev, next, trusted);
    if (stream_state == PT_STREAM_SUSPENDED)
        return 0;
    next_tid = TASK_FIELD(next, pid, trusted);
    if (thread_traced(prev, trusted)) {
        TD_EMIT(trusted, prev, PT_TD_SWITCHFROM, prev_state, next_tid);
        /* as the kernel counts voluntary and involuntary switches */
        if (!preempt && prev_state != 0)
            TD_EMIT(trusted, prev, PT_TD_SLEEP, prev_state, next_tid);
        else
            TD_EMIT(trusted, prev, PT_TD_PREEMPT, prev_state, next_tid);
        if (next_tid == 0)
            TD_EMIT(trusted, prev, PT_TD_IDLE, bpf_get_smp_processor_id(), 0);
    }
    if (thread_traced(next, trusted))
        TD_EMIT(trusted, next, PT_TD_SWITCHTO, TASK_FIELD(prev, pid, trusted), 0);
    return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(td_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    return on_sched_switch(preempt, prev, next, prev_state, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(td_sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    return on_sched_switch(preempt, prev, next, prev_state, false);
}

static __always_inline int on_wakeup(struct task_struct *task, const bool trusted)
{
    if (stream_state == PT_STREAM_SUSPENDED || !thread_traced(task, trusted))
        return 0;
    TD_EMIT(trusted, task, PT_TD_READY, (__u32)bpf_get_current_pid_tgid(),
            BPF_CORE_READ(task, wake_cpu));
    return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(td_sched_wakeup, struct task_struct *task) { return on_wakeup(task, true); }

SEC("raw_tp/sched_wakeup")
int BPF_PROG(td_sched_wakeup_raw, struct task_struct *task) { return on_wakeup(task, false); }

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(td_sched_wakeup_new, struct task_struct *task) { return on_wakeup(task, true); }

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(td_sched_wakeup_new_raw, struct task_struct *task) { return on_wakeup(task, false); }

static __always_inline int on_signal_deliver(int sig, struct kernel_siginfo *info, const bool trusted)
{
    struct task_struct *task = current_task(trusted);

    if (stream_state == PT_STREAM_SUSPENDED || !thread_traced(task, trusted))
        return 0;
    TD_EMIT(trusted, task, PT_TD_CATCHSIG, sig, info ? BPF_CORE_READ(info, si_code) : 0);
    return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(td_signal_deliver, int sig, struct kernel_siginfo *info, struct k_sigaction *action)
{
    return on_signal_deliver(sig, info, true);
}

SEC("raw_tp/signal_deliver")
int BPF_PROG(td_signal_deliver_raw, int sig, struct kernel_siginfo *info, struct k_sigaction *action)
{
    return on_signal_deliver(sig, info, false);
}

static __always_inline int on_pi_setprio(struct task_struct *task, struct task_struct *pi_task,
                                         const bool trusted)
{
    int normal, boosted;

    if (stream_state == PT_STREAM_SUSPENDED || !thread_traced(task, trusted))
        return 0;
    normal = BPF_CORE_READ(task, normal_prio);
    boosted = pi_task ? BPF_CORE_READ(pi_task, prio) : normal;
    if (boosted >= normal)
        return 0; /* back to its own priority, or no boost */
    /* kernel prio 0..99 is real-time: sched_priority 99..0 */
    TD_EMIT(trusted, task, PT_TD_PRI_INHERIT, boosted < 100 ? 99 - boosted : 0, boosted);
    return 0;
}

SEC("tp_btf/sched_pi_setprio")
int BPF_PROG(td_pi_setprio, struct task_struct *task, struct task_struct *pi_task)
{
    return on_pi_setprio(task, pi_task, true);
}

SEC("raw_tp/sched_pi_setprio")
int BPF_PROG(td_pi_setprio_raw, struct task_struct *task, struct task_struct *pi_task)
{
    return on_pi_setprio(task, pi_task, false);
}

/* The task is freed a grace period after it released its tid, which a new
 * thread may hold by now: only an entry marked with this task's exit goes. */
static __always_inline int on_process_free(struct task_struct *task, const bool trusted)
{
    __u32 tid = BPF_CORE_READ(task, pid);
    struct pt_td_thread *thread;

    if (thread_traced(task, trusted))
        TD_EMIT(trusted, task, PT_TD_REAP, 0, 0);
    thread = bpf_map_lookup_elem(&td_threads, &tid);
    if (thread && thread->exited_start == (BPF_CORE_READ(task, start_time) | 1))
        bpf_map_delete_elem(&td_threads, &tid);
    return 0;
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(td_process_free, struct task_struct *task) { return on_process_free(task, true); }

SEC("raw_tp/sched_process_free")
int BPF_PROG(td_process_free_raw, struct task_struct *task) { return on_process_free(task, false); }

/* futex(2) operations that block the caller (FUTEX_CMD_MASK applied) */
#define PT_FUTEX_WAIT 0
#define PT_FUTEX_LOCK_PI 6
#define PT_FUTEX_WAIT_BITSET 9
#define PT_FUTEX_WAIT_REQUEUE_PI 11
#define PT_FUTEX_LOCK_PI2 13
#define PT_FUTEX_CMD_MASK 0x7f

SEC("tracepoint/syscalls/sys_enter_futex")
int td_futex_enter(struct trace_event_raw_sys_enter *ctx)
{
    struct task_struct *task;
    __u64 uaddr = ctx->args[0];
    __u32 op = ctx->args[1], command = op & PT_FUTEX_CMD_MASK, tid;

    if (stream_state == PT_STREAM_SUSPENDED)
        return 0;
    if (command != PT_FUTEX_WAIT && command != PT_FUTEX_WAIT_BITSET && command != PT_FUTEX_LOCK_PI &&
        command != PT_FUTEX_LOCK_PI2 && command != PT_FUTEX_WAIT_REQUEUE_PI)
        return 0;
    task = bpf_get_current_task_btf();
    if (!thread_traced(task, true))
        return 0;
    tid = (__u32)bpf_get_current_pid_tgid();
    bpf_map_update_elem(&futex_waits, &tid, &uaddr, BPF_ANY);
    td_emit(task, PT_TD_LOCK_TRY, uaddr, op);
    return 0;
}

SEC("tracepoint/syscalls/sys_exit_futex")
int td_futex_exit(struct trace_event_raw_sys_exit *ctx)
{
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64 *waited = bpf_map_lookup_elem(&futex_waits, &tid), uaddr;

    if (!waited)
        return 0;
    uaddr = *waited;
    bpf_map_delete_elem(&futex_waits, &tid);
    if (ctx->ret == -110 /* ETIMEDOUT */)
        td_emit(bpf_get_current_task_btf(), PT_TD_TIMEOUT, uaddr, 0);
    return 0;
}

/* ---- process lifecycle ----------------------------------------------------
 * Fork, exec and exit of traced processes. The stream needs them whatever the
 * user records (it attaches the probes of a new image, forgets an ended
 * process), so they are always written; when the stream is not running or
 * the type is filtered out they carry PT_RECORD_NOTICE_ONLY and are not
 * delivered. They wake the reader at once: probes of a new image are due.
 */

/* The primary target ended: its pid may be reused by an unrelated process. */
#define PT_PRIMARY_ENDED 0xffffffffu

struct lifecycle {
    struct cpu_slot slot;
    __u32 event_id;
    __u16 flags;
};

static __always_inline bool lifecycle_begin(struct lifecycle *l, __u32 event_id, bool notice_only)
{
    __u32 state_now = stream_state;

    if (!this_cpu_slot(&l->slot))
        return false;
    l->event_id = event_id;
    l->flags = 0;
    if (notice_only || state_now != PT_STREAM_RUNNING || event_filtered(event_id)) {
        l->flags = PT_RECORD_NOTICE_ONLY;
        if (!notice_only && state_now == PT_STREAM_FULL && !event_filtered(event_id))
            __sync_fetch_and_add(&l->slot.state->refused_full, 1);
    }
    return true;
}

/* As begin_record, but the stream needs these records whatever the user
 * records: one the stream stopped recording meanwhile becomes a notice. */
static __always_inline struct pt_record *lifecycle_reserve(struct lifecycle *l, __u64 size)
{
    struct pt_record *record = bpf_ringbuf_reserve(l->slot.ring, size, 0);
    __u32 state_now;

    if (!record) {
        if (!l->flags) /* a notice is no event */
            __sync_fetch_and_add(&l->slot.state->lost, 1);
        return NULL;
    }
    record->timestamp_ns = bpf_ktime_get_ns();
    state_now = stream_state;
    if (!l->flags && (state_now != PT_STREAM_RUNNING || event_filtered(l->event_id))) {
        l->flags = PT_RECORD_NOTICE_ONLY;
        if (state_now == PT_STREAM_FULL && !event_filtered(l->event_id))
            __sync_fetch_and_add(&l->slot.state->refused_full, 1);
    }
    return record;
}

static __always_inline void lifecycle_submit(struct lifecycle *l, struct pt_record *record,
                                             __u32 event_id, __u32 pid, __u32 data_len)
{
    struct task_struct *task = bpf_get_current_task_btf();
    struct pt_regs *user_regs = (struct pt_regs *)bpf_task_pt_regs(task);

    record->thread_id = current_pthread_id();
    record->prog_address = user_regs ? BPF_CORE_READ(user_regs, ip) : 0;
    record->pid = pid;
    record->tid = (__u32)bpf_get_current_pid_tgid();
    record->event_id = event_id;
    record->data_len = data_len;
    record->reserved = 0;
    record->flags = l->flags;
    record->cpu = l->slot.cpu;
    bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
}

static __always_inline int on_process_fork(struct task_struct *parent, struct task_struct *child,
                                           const bool trusted)
{
    __u32 parent_tgid = BPF_CORE_READ(parent, tgid), child_tgid = BPF_CORE_READ(child, tgid);
    __u32 inherited = inherit_children, one = 1;
    struct lifecycle l;
    struct pt_record *record;

    if (!process_traced(parent_tgid))
        return 0;
    if (child_tgid == parent_tgid) { /* a new thread of a traced process */
        if (stream_state != PT_STREAM_SUSPENDED) {
            TD_EMIT(trusted, parent, PT_TD_CREATE, BPF_CORE_READ(child, pid), task_pthread_id(child));
            TD_EMIT(trusted, parent, PT_TD_CONCURRENCY, BPF_CORE_READ(parent, signal, live.counter), 0);
        }
        return 0;
    }
    /* A full table (PT_MAX_TRACED_PROCESSES alive at once) leaves the
     * child untraced: its fork event says so, and the count tells the
     * stream's owner even when system events are filtered out. */
    if (inherited && bpf_map_update_elem(&traced_processes, &child_tgid, &one, BPF_ANY) != 0) {
        __u32 cpu = bpf_get_smp_processor_id();
        struct pt_cpu_state *cpu_state = bpf_map_lookup_elem(&cpu_states, &cpu);

        inherited = 0;
        if (cpu_state)
            __sync_fetch_and_add(&cpu_state->untraced_children, 1);
    }
    if (inherited)
        other_processes_traced = 1;
    if (!lifecycle_begin(&l, PT_EVENT_PROCESS_FORK, false))
        return 0;
    record = lifecycle_reserve(&l, PT_RECORD_HEADER_SIZE + 16);
    if (!record)
        return 0;
    __builtin_memcpy(record->data, &parent_tgid, 4);
    __builtin_memcpy(record->data + 4, &child_tgid, 4);
    __builtin_memcpy(record->data + 8, &inherited, 4);
    __builtin_memset(record->data + 12, 0, 4);
    lifecycle_submit(&l, record, PT_EVENT_PROCESS_FORK, parent_tgid, 12);
    return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(process_fork, struct task_struct *parent, struct task_struct *child)
{
    return on_process_fork(parent, child, true);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(process_fork_raw, struct task_struct *parent, struct task_struct *child)
{
    return on_process_fork(parent, child, false);
}

static __always_inline int on_process_exec(struct task_struct *task, pid_t former_tid,
                                           struct linux_binprm *bprm)
{
    __u32 tgid = BPF_CORE_READ(task, tgid);
    const char *path = BPF_CORE_READ(bprm, filename);
    struct lifecycle l;
    struct pt_record *record;
    long copied;

    if (!process_traced(tgid))
        return 0;
    if (!lifecycle_begin(&l, PT_EVENT_PROCESS_EXEC, false))
        return 0;
    record = lifecycle_reserve(&l, PT_RECORD_HEADER_SIZE + 8 + PT_EXEC_PATH_MAX);
    if (!record)
        return 0;
    __builtin_memcpy(record->data, &tgid, 4);
    __builtin_memcpy(record->data + 4, &former_tid, 4);
    copied = bpf_probe_read_kernel_str(record->data + 8, PT_EXEC_PATH_MAX, path);
    if (copied <= 0) {
        record->data[8] = 0;
        copied = 1;
    }
    lifecycle_submit(&l, record, PT_EVENT_PROCESS_EXEC, tgid, 8 + (copied & (PT_EXEC_PATH_MAX * 2 - 1)));
    return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(process_exec, struct task_struct *task, pid_t former_tid, struct linux_binprm *bprm)
{
    return on_process_exec(task, former_tid, bprm);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(process_exec_raw, struct task_struct *task, pid_t former_tid, struct linux_binprm *bprm)
{
    return on_process_exec(task, former_tid, bprm);
}

/* A thread's per-tid state, while it still holds its tid: its futex wait
 * ends here, and its table entry is marked so that its last events, and
 * only its own, still find it (see on_process_free). */
static __always_inline void forget_exiting_thread(struct task_struct *task)
{
    __u32 tid = BPF_CORE_READ(task, pid);
    struct pt_td_thread *thread;

    bpf_map_delete_elem(&futex_waits, &tid);
    thread = bpf_map_lookup_elem(&td_threads, &tid);
    if (!thread)
        return;
    if (thread->identity != 0 && td_entry_is_of(thread, task))
        thread->exited_start = BPF_CORE_READ(task, start_time) | 1;
    else /* written for an earlier holder of the tid after it had gone, or
          * with no identity, which the tid's next holder would inherit */
        bpf_map_delete_elem(&td_threads, &tid);
}

/* Fires for every thread that exits; the process has ended when the last
 * one goes (signal->live reached zero before this tracepoint). */
static __always_inline int on_process_exit(struct task_struct *task, const bool trusted)
{
    __u32 tgid = BPF_CORE_READ(task, tgid);
    __s32 status = BPF_CORE_READ(task, exit_code);
    struct lifecycle l;
    struct pt_record *record;

    __s32 live = BPF_CORE_READ(task, signal, live.counter);

    forget_exiting_thread(task);
    if (!process_traced(tgid))
        return 0;
    if (stream_state != PT_STREAM_SUSPENDED) {
        TD_EMIT(trusted, task, PT_TD_DEATH, status, 0);
        TD_EMIT(trusted, task, PT_TD_CONCURRENCY, live, 0);
    }
    if (live != 0)
        return 0; /* other threads remain */
    if (tgid == primary_tgid)
        primary_tgid = PT_PRIMARY_ENDED;
    else
        bpf_map_delete_elem(&traced_processes, &tgid);
    if (!lifecycle_begin(&l, PT_EVENT_PROCESS_EXIT, false))
        return 0;
    record = lifecycle_reserve(&l, PT_RECORD_HEADER_SIZE + 8);
    if (!record)
        return 0;
    __builtin_memcpy(record->data, &tgid, 4);
    __builtin_memcpy(record->data + 4, &status, 4);
    lifecycle_submit(&l, record, PT_EVENT_PROCESS_EXIT, tgid, 8);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(process_exit, struct task_struct *task) { return on_process_exit(task, true); }

SEC("raw_tp/sched_process_exit")
int BPF_PROG(process_exit_raw, struct task_struct *task) { return on_process_exit(task, false); }

/* On the dynamic linker's _dl_debug_state, which it calls whenever its list
 * of loaded objects changed (the hook debuggers use): a library was loaded
 * or unloaded, so the stream looks for new probes. */
SEC("uprobe")
int link_map_changed(struct pt_regs *ctx)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct lifecycle l;
    struct pt_record *record;

    if (!process_traced(tgid) || !lifecycle_begin(&l, PT_EVENT_LINK_MAP_CHANGED, true))
        return 0;
    record = lifecycle_reserve(&l, PT_RECORD_HEADER_SIZE);
    if (!record)
        return 0;
    lifecycle_submit(&l, record, PT_EVENT_LINK_MAP_CHANGED, tgid, 0);
    return 0;
}

/* posix_trace:eventid_open(id, name) in libposixtrace, at each new name: a
 * notice the stream keeps for naming the process's events, whatever it
 * records. */
SEC("usdt")
int user_event_name(struct pt_regs *ctx)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct lifecycle l;
    struct pt_record *record;
    struct pt_user_name *name;
    long id = 0, address = 0, copied;

    if (!process_traced(tgid) || !lifecycle_begin(&l, PT_EVENT_USER_NAME, true))
        return 0;
    bpf_usdt_arg(ctx, 0, &id);
    bpf_usdt_arg(ctx, 1, &address);
    record = lifecycle_reserve(&l, PT_RECORD_HEADER_SIZE + sizeof(struct pt_user_name));
    if (!record)
        return 0;
    name = (struct pt_user_name *)record->data;
    name->event_id = (__u32)id;
    copied = bpf_probe_read_user_str(name->name, PT_USER_NAME_MAX, (const void *)address);
    if (copied <= 0) { /* unreadable: no name, the reader falls back on memory */
        bpf_ringbuf_discard(record, BPF_RB_NO_WAKEUP);
        return 0;
    }
    name->length = (__u32)copied - 1;
    lifecycle_submit(&l, record, PT_EVENT_USER_NAME, tgid, sizeof(struct pt_user_name));
    return 0;
}
