/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of posixtrace.bpf.c, the one BPF object of a stream: the stream's maps
 * and controls, and the reservation of a record in this CPU's ring, with the
 * checks every event passes. */
#ifndef POSIXTRACE_STREAM_BPF_H
#define POSIXTRACE_STREAM_BPF_H

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
    __type(value, __u32); /* the image it runs (PT_IMAGE_NONE: see posixtrace.h) */
} traced_processes SEC(".maps");

/* One entry per CPU (max_entries set at load), mmapped by userspace. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pt_cpu_state);
} cpu_states SEC(".maps");

/* POSIX_TRACE_LOOP: the data bytes of each CPU's loop ring (a power of two,
 * at least PT_LOOP_CHUNK_BYTES), set before load; 0 for other streams, whose
 * events go to the BPF ring buffers. */
const volatile __u64 loop_ring_bytes = 0;

/* One loop ring per CPU (posixtrace.h), mmapped by userspace. Its entries
 * are sized at load, so the map declares sizes, not a BTF type. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, PT_LOOP_META_BYTES + PT_LOOP_SLACK_BYTES);
} loop_rings SEC(".maps");

/* See struct pt_loss_notice. */
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, PT_LOSS_NOTICE_RING_BYTES);
} loss_notices SEC(".maps");

/* Stream control, written by userspace while the programs run. */
volatile __u32 stream_state; /* enum pt_stream_state */
volatile __u32 primary_tgid; /* the process the stream was created for */
volatile __u32 primary_image; /* the image it runs */
volatile __u32 last_image;    /* the latest image number given (userspace gives some too) */
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
/* The probes attached for the current stream carry this number in the high
 * half of their attach cookie. A program kept for the next stream retires
 * its probes by changing it: their detachment takes the kernel hundreds of
 * milliseconds, done meanwhile on a library thread, and until it is done
 * they fire for nothing, even in a process the next stream traces. */
volatile __u32 probe_generation;
/* Tags the loop rings' headers (struct pt_loop_header): set once at load. */
volatile __u64 loop_tag_key;

static __always_inline bool probe_is_current(__u64 cookie)
{
    return (__u32)(cookie >> 32) == probe_generation;
}

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

/* The image a traced process runs, or PT_IMAGE_NONE when it is not traced. */
static __always_inline __u32 process_image(__u32 tgid)
{
    __u32 *image;

    if (tgid == primary_tgid)
        return primary_image;
    /* the hash is looked up only once a traced process has had children */
    if (!other_processes_traced)
        return PT_IMAGE_NONE;
    image = bpf_map_lookup_elem(&traced_processes, &tgid);
    return image ? *image : PT_IMAGE_NONE;
}

static __always_inline bool process_traced(__u32 tgid)
{
    return process_image(tgid) != PT_IMAGE_NONE;
}

/* A number no image had: 2^32 forks and execs would wrap it, past
 * PT_IMAGE_NONE. */
static __always_inline __u32 new_image(void)
{
    __u32 image = __sync_fetch_and_add(&last_image, 1) + 1;

    return image != PT_IMAGE_NONE ? image : __sync_fetch_and_add(&last_image, 1) + 1;
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

/* This CPU's rings and counters. */
struct cpu_slot {
    void *ring;
    __u8 *loop; /* its loop ring's entry, for a LOOP stream */
    struct pt_cpu_state *state;
    __u32 cpu;
};

static __always_inline bool this_cpu_slot(struct cpu_slot *slot)
{
    slot->cpu = bpf_get_smp_processor_id();
    slot->state = bpf_map_lookup_elem(&cpu_states, &slot->cpu);
    slot->ring = bpf_map_lookup_elem(&rings, &slot->cpu);
    slot->loop = NULL;
    if (loop_ring_bytes) {
        slot->loop = bpf_map_lookup_elem(&loop_rings, &slot->cpu);
        if (!slot->loop)
            return false;
    }
    return slot->state && slot->ring;
}

/* The header at `position` of a loop ring. The mask gives the verifier the
 * offset's bound (the entry has PT_LOOP_SLACK_BYTES past the data) and its
 * alignment (positions are multiples of 8). */
static __always_inline struct pt_loop_header *loop_header(__u8 *loop, __u64 position)
{
    return (struct pt_loop_header *)(loop + PT_LOOP_META_BYTES +
                                     (position & (loop_ring_bytes - 1) & ~7ull));
}

/* Writes a header: its length first, then its tag, which makes it count
 * (the exchange orders the two for the reader on every architecture). */
static __always_inline void loop_write_header(struct pt_loop_header *header, __u64 position,
                                              __u32 length, __u32 sequence)
{
    header->length = length;
    header->sequence = sequence;
    __sync_lock_test_and_set(&header->tag, position ^ loop_tag_key);
}

/* A loop ring makes no descriptor readable, so a drain dozing while a flood
 * comes would find it only once it had overwritten what the stream had
 * room for. The record (or padding) that begins a quarter of the ring wakes
 * the drain through this CPU's BPF ring buffer, with an empty record
 * discarded there, which the drain skips: four wakeups a round of the ring,
 * the first with three quarters still to write. [head, end) is what the
 * reservation covered. */
static __always_inline void wake_at_loop_quarter(struct cpu_slot *slot, __u64 head, __u64 end)
{
    const __u64 quarter_mask = ~(loop_ring_bytes / 4 - 1);
    void *nudge;

    if ((head & ~quarter_mask) != 0 && (head & quarter_mask) == ((end - 1) & quarter_mask))
        return;
    nudge = bpf_ringbuf_reserve(slot->ring, 8, 0);
    if (nudge)
        bpf_ringbuf_discard(nudge, BPF_RB_FORCE_WAKEUP);
}

/* Reserves a record of `size` bytes (a constant) in this CPU's loop ring,
 * never across a chunk's end; the start of a chunk skipped to gets a
 * padding record over the end of the chunk before. Spans are multiples of
 * 16, so that a padding record always has room for its header. NULL after
 * PT_LOOP_RESERVE_TRIES reservations of other programs came first. */
static __always_inline struct pt_record *loop_reserve(struct cpu_slot *slot, __u64 size)
{
    struct pt_loop_ring_meta *meta = (struct pt_loop_ring_meta *)slot->loop;
    const __u64 span = (sizeof(struct pt_loop_header) + size + 15) & ~15ull;
    __u64 head = 0, start = 0;
    struct pt_loop_header *header;
    bool reserved = false;

    if (span > PT_LOOP_CHUNK_BYTES)
        return NULL;
    for (int i = 0; i < PT_LOOP_RESERVE_TRIES && !reserved; i++) {
        head = meta->head;
        start = head;
        if ((head & (PT_LOOP_CHUNK_BYTES - 1)) + span > PT_LOOP_CHUNK_BYTES)
            start = (head + PT_LOOP_CHUNK_BYTES - 1) & ~(__u64)(PT_LOOP_CHUNK_BYTES - 1);
        reserved = __sync_val_compare_and_swap(&meta->head, head, start + span) == head;
    }
    if (!reserved)
        return NULL;
    wake_at_loop_quarter(slot, head, start + span);
    if (start != head)
        loop_write_header(loop_header(slot->loop, head), head,
                          (__u32)(start - head - sizeof(struct pt_loop_header)) |
                              BPF_RINGBUF_DISCARD_BIT | PT_LOOP_PADDING,
                          0);
    header = loop_header(slot->loop, start);
    loop_write_header(header, start, (__u32)(span - sizeof(*header)) | BPF_RINGBUF_BUSY_BIT,
                      (__u32)__sync_fetch_and_add(&meta->sequence, 1));
    return (struct pt_record *)(header + 1);
}

/* The record's header in its loop ring. */
static __always_inline __u32 *loop_length_of(struct pt_record *record)
{
    return &((struct pt_loop_header *)record - 1)->length;
}

/* A thread in a PID namespace of its own (a container's) goes by other
 * numbers there: they follow the record's data, which ends at most
 * `data_room` bytes in (the reservation has PT_NAMESPACE_IDS_ROOM more).
 * Call once data_len and flags are set. Nothing is added for a thread of
 * the first namespace, nor for one that released its pid (it exited).
 * `trusted` (a constant): `task` is a BTF pointer, so the look at the
 * level, which every record pays, is two plain loads. */
static __always_inline void add_namespace_ids(struct pt_record *record, const __u64 data_room,
                                              struct task_struct *task, const bool trusted)
{
    struct pid *thread_pid = trusted ? task->thread_pid : BPF_CORE_READ(task, thread_pid);
    struct pid *leader_pid;
    struct pt_namespace_ids ids;
    struct upid number;
    unsigned int level;
    __u64 at;

    if (!thread_pid)
        return;
    level = trusted ? thread_pid->level : BPF_CORE_READ(thread_pid, level);
    if (level == 0)
        return;
    leader_pid = BPF_CORE_READ(task, group_leader, thread_pid);
    if (!leader_pid || bpf_core_read(&number, sizeof(number), &thread_pid->numbers[level]))
        return;
    ids.tid = number.nr;
    if (bpf_core_read(&number, sizeof(number), &leader_pid->numbers[level]))
        return;
    ids.pid = number.nr;
    at = ((__u64)record->data_len + 7) & ~7ull;
    asm volatile("" : "+r"(at)); /* bound this register, not a copy */
    if (at > data_room)
        return;
    __builtin_memcpy(record->data + at, &ids, sizeof(ids));
    record->flags |= PT_RECORD_NAMESPACE_IDS;
}

/* Hands a record begun with begin_record to the reader. */
static __always_inline void commit_record(struct pt_record *record, __u64 wakeup)
{
    if (loop_ring_bytes)
        __sync_fetch_and_xor(loop_length_of(record), BPF_RINGBUF_BUSY_BIT);
    else
        bpf_ringbuf_submit(record, wakeup);
}

static __always_inline void discard_record(struct pt_record *record)
{
    if (loop_ring_bytes)
        __sync_fetch_and_xor(loop_length_of(record),
                             BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
    else
        bpf_ringbuf_discard(record, BPF_RB_NO_WAKEUP);
}

/* A record found no room in this CPU's ring: counted, and the first of a
 * run says when the run began (struct pt_loss_notice). The stamp is read
 * before the count, so it is no later than any loss counted after it. */
static __always_inline void count_ring_full(struct pt_cpu_state *state, __u32 cpu)
{
    struct pt_loss_notice *notice;
    __u64 now;

    if (!state->loss_run_open) { /* the rest of a run costs one load and the count */
        now = bpf_ktime_get_ns();
        notice = bpf_ringbuf_reserve(&loss_notices, sizeof(*notice), 0);
        if (notice) {
            notice->timestamp_ns = now;
            notice->lost_before = state->lost;
            notice->cpu = cpu;
            notice->unused = 0;
            bpf_ringbuf_submit(notice, BPF_RB_NO_WAKEUP);
            state->loss_run_open = 1;
        }
    }
    __sync_fetch_and_add(&state->lost, 1);
}

/* A record found room: the next loss begins a run. */
static __always_inline void end_loss_run(struct pt_cpu_state *state)
{
    if (state->loss_run_open)
        state->loss_run_open = 0;
}

/* Reserves a record of `size` bytes (a constant at every call site) in
 * this CPU's ring (its loop ring for a LOOP stream), then stamps it. The
 * stamp is taken after the reservation: a record reserved after the reader
 * looked at the ring's producer position is stamped after that look, which
 * is what the merge's bound relies on. The state and the
 * filter are read again after the stamp: a record stamped after
 * posix_trace_stop() or a filter change took effect is discarded, so every
 * recorded event precedes the stop or filter event that excludes it.
 * NULL: no room (counted as lost), or the stream stopped or filtered the
 * event meanwhile. */
static __always_inline struct pt_record *begin_record(struct cpu_slot *slot, __u64 size,
                                                      __u32 event_id)
{
    struct pt_record *record =
        loop_ring_bytes ? loop_reserve(slot, size) : bpf_ringbuf_reserve(slot->ring, size, 0);
    __u32 state_now;

    if (!record) {
        count_ring_full(slot->state, slot->cpu);
        return NULL;
    }
    end_loss_run(slot->state);
    record->timestamp_ns = bpf_ktime_get_ns();
    state_now = stream_state;
    if (state_now != PT_STREAM_RUNNING || event_filtered(event_id)) {
        if (state_now == PT_STREAM_FULL && !event_filtered(event_id))
            __sync_fetch_and_add(&slot->state->refused_full, 1);
        discard_record(record);
        return NULL;
    }
    return record;
}

#endif
