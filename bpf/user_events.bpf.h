/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of posixtrace.bpf.c, the one BPF object of a stream:
 * posix_trace_event()'s probe and every other USDT probe of a traced process. */
#ifndef POSIXTRACE_USER_EVENTS_BPF_H
#define POSIXTRACE_USER_EVENTS_BPF_H

struct user_event_args {
    struct pt_regs *ctx;
    const struct pt_usdt_spec *spec;
    struct cpu_slot slot;
    __u64 pid_tgid;
    __u64 copy_len;
    __u32 event_id;
    __u32 image; /* of the recording process: its names give the id's meaning */
    __u16 flags;
};

/* Writes the record straight into the ring (no staging copy a preempting
 * program could overwrite). */
static __always_inline void record_user_event(struct user_event_args *a, const __u64 room)
{
    __u64 wakeup = wakeup_flag(a->slot.ring, a->slot.state, room);
    struct pt_record *record =
        begin_record(&a->slot, PT_RECORD_HEADER_SIZE + room + PT_NAMESPACE_IDS_ROOM, a->event_id);
    __u64 copy_len = a->copy_len;
    __u16 flags = a->flags;

    if (!record)
        return;
    if (room) {
        asm volatile("" : "+r"(copy_len)); /* keep the bound on this register */
        if (copy_len > room)
            copy_len = room;
        if (copy_len && bpf_probe_read_user(record->data, copy_len,
                                            (const void *)usdt_arg(a->ctx, a->spec, 1)) != 0) {
            copy_len = 0;
            flags |= PT_RECORD_DATA_FAULT;
        }
    } else {
        copy_len = 0;
    }
    record->thread_id = current_pthread_id();
    record->prog_address = usdt_arg(a->ctx, a->spec, 3);
    record->pid = a->pid_tgid >> 32;
    record->tid = (__u32)a->pid_tgid;
    record->event_id = a->event_id;
    record->data_len = copy_len;
    record->image = a->image;
    record->flags = flags;
    record->cpu = a->slot.cpu;
    add_namespace_ids(record, room, bpf_get_current_task_btf(), true);
    commit_record(record, wakeup);
}

/* posix_trace_event(event_id, data, data_len) in libposixtrace; the fourth
 * argument is the caller's address. Arguments are fetched only once the
 * cheap checks have passed: an untraced process or a stopped stream costs
 * the uprobe and two loads. */
SEC("uprobe")
int user_event(struct pt_regs *ctx)
{
    __u32 state_now = stream_state;
    struct user_event_args a = {.ctx = ctx};
    __u64 data_len;

    if (state_now == PT_STREAM_SUSPENDED)
        return 0;
    a.pid_tgid = bpf_get_current_pid_tgid();
    a.image = process_image(a.pid_tgid >> 32);
    if (a.image == PT_IMAGE_NONE)
        return 0;
    a.spec = usdt_spec_of(ctx);
    if (!a.spec)
        return 0;
    a.event_id = usdt_arg(ctx, a.spec, 0);
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

    a.copy_len = data_len = usdt_arg(ctx, a.spec, 2);
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

/* A USDT record's data: the arguments, a string, its argument count. */
#define PT_USDT_DATA_ROOM (PT_USDT_MAX_ARGS * 8 + PT_USDT_STRING_MAX + 8)

static __always_inline __u8 usdt_string_argument(__u32 event_id)
{
    __u64 type = event_id - 2048;

    asm volatile("" : "+r"(type)); /* bound this register, not a copy */
    return type < PT_USDT_TYPES ? usdt_string_arg[type] : 0;
}

/* Any USDT probe of a traced process. The stream gives each PROVIDER:NAME an
 * event type id, kept in the site's layout (usdt_specs, found through the
 * attach cookie); the payload is the probe's arguments, each a little-endian
 * 64-bit value, in order. */
SEC("uprobe")
int usdt_event(struct pt_regs *ctx)
{
    __u32 state_now = stream_state, event_id;
    const struct pt_usdt_spec *spec;
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
    spec = usdt_spec_of(ctx);
    if (!spec)
        return 0;
    event_id = (__u32)spec->event_id;
    if (event_filtered(event_id))
        return 0;
    if (!this_cpu_slot(&slot))
        return 0;
    if (state_now == PT_STREAM_FULL) {
        __sync_fetch_and_add(&slot.state->refused_full, 1);
        return 0;
    }

    wakeup = wakeup_flag(slot.ring, slot.state, 0);
    record = begin_record(&slot, PT_RECORD_HEADER_SIZE + PT_USDT_DATA_ROOM + PT_NAMESPACE_IDS_ROOM,
                          event_id);
    if (!record)
        return 0;
    count = spec->arg_count;
    for (int i = 0; i < PT_USDT_MAX_ARGS; i++) {
        __u64 value;
        if (i >= count)
            break;
        value = usdt_arg(ctx, spec, i);
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
    record->image = PT_IMAGE_NONE;
    record->flags = 0;
    record->cpu = slot.cpu;
    add_namespace_ids(record, PT_USDT_DATA_ROOM, bpf_get_current_task_btf(), true);
    commit_record(record, wakeup);
    return 0;
}

#endif
