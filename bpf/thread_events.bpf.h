/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of posixtrace.bpf.c, the one BPF object of a stream: the thread
 * events' maps, thread_db's reporting rule, and the recording of one event. */
#ifndef POSIXTRACE_THREAD_EVENTS_BPF_H
#define POSIXTRACE_THREAD_EVENTS_BPF_H

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

/* thread_db's rule, when a thread agent controls the process: reported if
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

/* A thread event's reservation: its data, and room for namespace ids. */
#define PT_TD_RECORD_BYTES                                                                         \
    (PT_RECORD_HEADER_SIZE + sizeof(struct pt_td_data) + PT_NAMESPACE_IDS_ROOM)

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
    record = begin_record(&slot, PT_TD_RECORD_BYTES, event_id);
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
    record->image = PT_IMAGE_NONE;
    record->flags = 0;
    record->cpu = slot.cpu;
    add_namespace_ids(record, sizeof(struct pt_td_data), task, with_user_regs);
    commit_record(record, wakeup);
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
    end_loss_run(cpu_state);
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
    record->image = PT_IMAGE_NONE;
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

/* At sched_process_exit, a thread's per-tid state, while it still holds
 * its tid: its futex wait ends, and its table entry is marked so that its
 * last events, and only its own, still find it (see on_process_free). */
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

#endif
