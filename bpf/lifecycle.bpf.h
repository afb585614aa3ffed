/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of posixtrace.bpf.c, the one BPF object of a stream: fork, exec and
 * exit of traced processes, and the notices the stream needs whatever it
 * records. */
#ifndef POSIXTRACE_LIFECYCLE_BPF_H
#define POSIXTRACE_LIFECYCLE_BPF_H

/* ---- process lifecycle ----------------------------------------------------
 * Fork, exec and exit of traced processes. The stream needs them whatever the
 * user records (it attaches the probes of a new image, forgets an ended
 * process), so they are always written; when the stream is not running or
 * the type is filtered out they carry PT_RECORD_NOTICE_ONLY and are not
 * delivered. They wake the reader at once: probes of a new image are due.
 */

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
 * records: one the stream stopped recording meanwhile becomes a notice.
 * `data_room`: what the data can take, the namespace ids aside. */
static __always_inline struct pt_record *lifecycle_reserve(struct lifecycle *l, __u64 data_room)
{
    struct pt_record *record = bpf_ringbuf_reserve(
        l->slot.ring, PT_RECORD_HEADER_SIZE + data_room + PT_NAMESPACE_IDS_ROOM, 0);
    __u32 state_now;

    if (!record) {
        if (!l->flags) /* a notice is no event */
            count_ring_full(l->slot.state, l->slot.cpu);
        __sync_fetch_and_add(&l->slot.state->lifecycle_lost, 1);
        return NULL;
    }
    end_loss_run(l->slot.state);
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
                                             __u32 event_id, __u32 pid, __u32 image, __u32 data_len,
                                             const __u64 data_room)
{
    struct task_struct *task = bpf_get_current_task_btf();
    struct pt_regs *user_regs = (struct pt_regs *)bpf_task_pt_regs(task);

    record->thread_id = current_pthread_id();
    record->prog_address = user_regs ? BPF_CORE_READ(user_regs, ip) : 0;
    record->pid = pid;
    record->tid = (__u32)bpf_get_current_pid_tgid();
    record->event_id = event_id;
    record->data_len = data_len;
    record->image = image;
    record->flags = l->flags;
    record->cpu = l->slot.cpu;
    add_namespace_ids(record, data_room, task, true);
    bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
}

static __always_inline int on_process_fork(struct task_struct *parent, struct task_struct *child,
                                           const bool trusted)
{
    __u32 parent_tgid = BPF_CORE_READ(parent, tgid), child_tgid = BPF_CORE_READ(child, tgid);
    __u32 inherited = inherit_children, parent_image = process_image(parent_tgid);
    __u32 child_image = PT_IMAGE_NONE;
    struct lifecycle l;
    struct pt_record *record;

    if (parent_image == PT_IMAGE_NONE)
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
    if (inherited)
        child_image = new_image();
    if (inherited && bpf_map_update_elem(&traced_processes, &child_tgid, &child_image, BPF_ANY) != 0) {
        __u32 cpu = bpf_get_smp_processor_id();
        struct pt_cpu_state *cpu_state = bpf_map_lookup_elem(&cpu_states, &cpu);

        inherited = 0;
        child_image = PT_IMAGE_NONE;
        if (cpu_state)
            __sync_fetch_and_add(&cpu_state->untraced_children, 1);
    }
    if (inherited)
        other_processes_traced = 1;
    if (!lifecycle_begin(&l, PT_EVENT_PROCESS_FORK, false))
        return 0;
    record = lifecycle_reserve(&l, PT_FORK_RECORD_DATA);
    if (!record)
        return 0;
    __builtin_memcpy(record->data, &parent_tgid, 4);
    __builtin_memcpy(record->data + 4, &child_tgid, 4);
    __builtin_memcpy(record->data + 8, &inherited, 4);
    __builtin_memcpy(record->data + 12, &child_image, 4);
    lifecycle_submit(&l, record, PT_EVENT_PROCESS_FORK, parent_tgid, parent_image, 12,
                     PT_FORK_RECORD_DATA);
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
    __u32 image;
    struct lifecycle l;
    struct pt_record *record;
    long copied;

    if (!process_traced(tgid))
        return 0;
    /* The new image is numbered before its record is reserved: its events
     * are told from the old image's even when the record is lost. */
    image = new_image();
    if (tgid == primary_tgid)
        primary_image = image;
    else
        bpf_map_update_elem(&traced_processes, &tgid, &image, BPF_EXIST);
    if (!lifecycle_begin(&l, PT_EVENT_PROCESS_EXEC, false))
        return 0;
    record = lifecycle_reserve(&l, 8 + PT_EXEC_PATH_MAX);
    if (!record)
        return 0;
    __builtin_memcpy(record->data, &tgid, 4);
    __builtin_memcpy(record->data + 4, &former_tid, 4);
    copied = bpf_probe_read_kernel_str(record->data + 8, PT_EXEC_PATH_MAX, path);
    if (copied <= 0) {
        record->data[8] = 0;
        copied = 1;
    }
    lifecycle_submit(&l, record, PT_EVENT_PROCESS_EXEC, tgid, image,
                     8 + (copied & (PT_EXEC_PATH_MAX * 2 - 1)), 8 + PT_EXEC_PATH_MAX);
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

/* Fires for every thread that exits; the process has ended when the last
 * one goes (signal->live reached zero before this tracepoint). */
static __always_inline int on_process_exit(struct task_struct *task, const bool trusted)
{
    __u32 tgid = BPF_CORE_READ(task, tgid);
    __s32 status = BPF_CORE_READ(task, exit_code);
    __s32 live = BPF_CORE_READ(task, signal, live.counter);
    struct lifecycle l;
    struct pt_record *record;
    __u32 image;

    forget_exiting_thread(task);
    image = process_image(tgid);
    if (image == PT_IMAGE_NONE)
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
    record = lifecycle_reserve(&l, 8);
    if (!record)
        return 0;
    __builtin_memcpy(record->data, &tgid, 4);
    __builtin_memcpy(record->data + 4, &status, 4);
    lifecycle_submit(&l, record, PT_EVENT_PROCESS_EXIT, tgid, image, 8, 8);
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
    __u32 tgid = bpf_get_current_pid_tgid() >> 32, image = process_image(tgid);
    struct lifecycle l;
    struct pt_record *record;

    if (image == PT_IMAGE_NONE || !probe_is_current(bpf_get_attach_cookie(ctx)) ||
        !lifecycle_begin(&l, PT_EVENT_LINK_MAP_CHANGED, true))
        return 0;
    record = lifecycle_reserve(&l, 0);
    if (!record)
        return 0;
    lifecycle_submit(&l, record, PT_EVENT_LINK_MAP_CHANGED, tgid, image, 0, 0);
    return 0;
}

/* posix_trace:eventid_open(id, name) in libposixtrace, at each new name: a
 * notice the stream keeps for naming the process's events, whatever it
 * records. */
SEC("uprobe")
int user_event_name(struct pt_regs *ctx)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32, image = process_image(tgid);
    const struct pt_usdt_spec *spec;
    struct lifecycle l;
    struct pt_record *record;
    struct pt_user_name *name;
    __u64 id, address;
    long copied;

    if (image == PT_IMAGE_NONE || !(spec = usdt_spec_of(ctx)) ||
        !lifecycle_begin(&l, PT_EVENT_USER_NAME, true))
        return 0;
    id = usdt_arg(ctx, spec, 0);
    address = usdt_arg(ctx, spec, 1);
    record = lifecycle_reserve(&l, sizeof(struct pt_user_name));
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
    lifecycle_submit(&l, record, PT_EVENT_USER_NAME, tgid, image, sizeof(struct pt_user_name),
                     sizeof(struct pt_user_name));
    return 0;
}

#endif
