/* Shared by the BPF programs and libposixtrace: the layout of the records the
 * kernel writes into the per-CPU rings, and the limits both sides rely on.
 * Every field is fixed-width and little-endian (x86-64 / arm64).
 */
#ifndef POSIXTRACE_BPF_SHARED_H
#define POSIXTRACE_BPF_SHARED_H

#ifdef __bpf__
/* vmlinux.h provides __u8 ... __u64 */
#else
#include <linux/types.h>
#endif

/* Largest max-data-size a stream accepts; the BPF copy is bounded by it. */
#define PT_DATA_SIZE_LIMIT 8192u

/* Size of the event id space and of the filter bitmap. */
#define PT_EVENT_ID_LIMIT 8192u
#define PT_FILTER_WORDS (PT_EVENT_ID_LIMIT / 64)

/* Arguments a USDT probe can have (libbpf's BPF_USDT_MAX_ARG_CNT). */
#define PT_USDT_MAX_ARGS 12
/* Bytes of a string argument copied in the kernel, its NUL included. */
#define PT_USDT_STRING_MAX 64
/* USDT event types a stream can have. */
#define PT_USDT_TYPES (PT_EVENT_ID_LIMIT - 2048)

/* USDT probe sites one stream can attach, each a uprobe of its own. */
#define PT_USDT_MAX_SITES 4096
/* Distinct argument layouts (struct pt_usdt_spec) one stream can hold. */
#define PT_USDT_MAX_SPECS 1024

/* How many processes one stream may trace at once. */
#define PT_MAX_TRACED_PROCESSES 4096
/* primary_tgid once the primary target ended: its pid may be reused by an
 * unrelated process. */
#define PT_PRIMARY_ENDED 0xffffffffu

/* Each BPF ring record is preceded by the kernel's 8-byte ring header. */
#define PT_RING_HEADER_SIZE 8u

/* x86-64 registers a USDT argument can sit in, as the BPF side reads them
 * from struct pt_regs. */
enum pt_register {
    PT_REG_NONE = 0,
    PT_REG_AX, PT_REG_BX, PT_REG_CX, PT_REG_DX, PT_REG_SI, PT_REG_DI, PT_REG_BP, PT_REG_SP,
    PT_REG_R8, PT_REG_R9, PT_REG_R10, PT_REG_R11, PT_REG_R12, PT_REG_R13, PT_REG_R14, PT_REG_R15,
};

/* Where one argument of a USDT probe site is, as its note says. */
enum pt_usdt_arg_kind {
    PT_USDT_ARG_CONSTANT = 0, /* `value` itself */
    PT_USDT_ARG_REGISTER = 1, /* the register */
    PT_USDT_ARG_MEMORY = 2,   /* the bytes at the register + `value` */
};

struct pt_usdt_arg {
    __s64 value;
    __u8 kind;  /* enum pt_usdt_arg_kind */
    __u8 reg;   /* enum pt_register */
    __s8 size;  /* bytes: 1, 2, 4 or 8; negative when signed */
    __u8 pad[5];
};

/* The argument layout of a probe site, found through the uprobe's BPF
 * cookie (its index in the usdt_specs map in the low half, the program's
 * probe generation in the high half): each site is read as its own note
 * says, whatever compiler or build placed its arguments. */
struct pt_usdt_spec {
    __u64 event_id; /* the event type of a USDT probe (PROVIDER:NAME) */
    __u32 arg_count;
    __u32 pad;
    struct pt_usdt_arg args[PT_USDT_MAX_ARGS];
};

enum pt_record_flags {
    PT_RECORD_TRUNCATED = 1 << 0,  /* the caller passed more than max-data-size */
    PT_RECORD_DATA_FAULT = 1 << 1, /* the caller's data pointer was unreadable */
    /* For the stream's own bookkeeping only (the stream was not running, or
     * the type is filtered out): it learns of forks, execs and exits
     * whatever the user records. */
    PT_RECORD_NOTICE_ONLY = 1 << 2,
    /* The thread is in a PID namespace other than the first (the tracer's):
     * its numbers there follow the data (struct pt_namespace_ids). */
    PT_RECORD_NAMESPACE_IDS = 1 << 3,
};

/* A thread's process and thread ids as its own PID namespace numbers them,
 * where they differ from the host's. A record flagged
 * PT_RECORD_NAMESPACE_IDS has them at its data's end rounded up to 8 bytes,
 * inside the record; the kernel side reserves PT_NAMESPACE_IDS_ROOM bytes
 * more than the data can take for them. */
struct pt_namespace_ids {
    __u32 pid;
    __u32 tid;
};
#define PT_NAMESPACE_IDS_ROOM 8u

/* posix_trace_overflow: the kernel writes it when it learns that thread
 * events of a thread could not be recorded (data: posix_trace_overflow_data). */
#define PT_EVENT_OVERFLOW 3
/* The id range posix_trace_event() records: the unnamed user event and the
 * user events; USDT event ids start where it ends. */
#define PT_EVENT_USER_FIRST 31
#define PT_EVENT_USDT_FIRST 2048

/* Event ids of the process lifecycle events the kernel side writes; the
 * public names and data are in <posix_trace/events.h>. */
#define PT_EVENT_PROCESS_FORK 8
#define PT_EVENT_PROCESS_EXEC 9
#define PT_EVENT_PROCESS_EXIT 10
/* Never delivered: the dynamic linker of a traced process changed its list
 * of loaded objects (dlopen, dlclose, start-up), so new probes may be due. */
#define PT_EVENT_LINK_MAP_CHANGED 15

/* Never delivered: a traced process registered a user event name
 * (posix_trace_eventid_open); data: struct pt_user_name. Names travel in-band
 * with the events, so they survive the process and reach every log. */
#define PT_EVENT_USER_NAME 14
/* Bytes of a user event name, NUL included (TRACE_EVENT_NAME_MAX). */
#define PT_USER_NAME_MAX 128

struct pt_user_name {
    __u32 event_id; /* the id in the registering process */
    __u32 length;   /* bytes of name, NUL excluded */
    char name[PT_USER_NAME_MAX];
};

/* Bytes of the executable's path an exec record carries, NUL included. */
#define PT_EXEC_PATH_MAX 256

/* One traced event, as the kernel writes it. `data_len` bytes of payload
 * follow the header; the ring pads the whole to 8 bytes. */
struct pt_record {
    __u64 timestamp_ns; /* CLOCK_MONOTONIC at the instrumentation point */
    __u64 thread_id;    /* pthread_self() of the thread: its FS base on x86-64 */
    __u64 prog_address; /* address of the instrumentation point's caller */
    __u32 pid;          /* tgid */
    __u32 tid;
    __u32 event_id;
    __u32 data_len;
    __u32 image;       /* user events and lifecycle records: see PT_IMAGE_NONE */
    __u16 flags;       /* enum pt_record_flags */
    __u16 cpu;         /* the CPU that recorded it; PT_CPU_SYSTEM: none */
    __u8 data[];
};

#define PT_RECORD_HEADER_SIZE 48u
/* The cpu of an event the trace system made itself (a start, a stop, a
 * loss report), not one a program or a thread recorded. */
#define PT_CPU_SYSTEM 0xffffu

/* Each image a traced process runs gets a number of its own, given in the
 * kernel at the fork that made the process and at each exec (the value of
 * traced_processes; primary_image for the primary). A user event and a
 * name notice carry the image that recorded them, so the stream reads an
 * id through that image's names even when the record of the fork or exec
 * that made the image was lost. A fork record carries the parent's image in
 * `image` and the child's in the 4 bytes after its data (its reservation is
 * PT_FORK_RECORD_DATA bytes); an exec record, the new image's; an exit
 * record, the ended image's. Other records: PT_IMAGE_NONE. */
#define PT_IMAGE_NONE 0u
#define PT_FORK_RECORD_DATA 16u

/* Per-CPU state of the BPF side, one entry per CPU in an mmapped array that
 * userspace reads every drain pass: what a CPU could not record is counted
 * here, and the drain reports it at its place in time (docs/architecture.md,
 * "Losses"). Programs on one CPU can interrupt each other (and uprobe
 * programs can be preempted on kernels with full preemption), so counters are
 * updated atomically. One cache line per CPU. */
struct pt_cpu_state {
    __u64 lost;                /* records that found no room in this CPU's ring */
    __u64 refused_full;        /* events refused while POSIX_TRACE_UNTIL_FULL had stopped */
    __u64 unreported_switches; /* thread events of context switches the kernel did not report */
    __u64 records;             /* records written, for pacing the fill check (not exact) */
    /* The task this CPU last switched to, as the switch program saw it: the
     * next switch's `prev` must be that task, or the kernel switched without
     * firing sched_switch (seen on some kernels, with ftrace too). */
    __u32 last_next_tid;
    __u32 last_next_tgid;
    __u32 switch_seen; /* last_next_* are valid */
    /* A record found no room since the last one that did, and its loss
     * notice was written: the losses after it belong to the same run. */
    __u32 loss_run_open;
    /* Children a traced process forked under POSIX_TRACE_INHERITED that are
     * not traced: PT_MAX_TRACED_PROCESSES traced processes were alive. */
    __u64 untraced_children;
    /* Lifecycle records (fork, exec, exit, link-map change, name) that found
     * no room, notices included: the stream then looks at every traced
     * process again instead of waiting for records that will never come. */
    __u64 lifecycle_lost;
};

/* Where a run of losses on one CPU began: written to the loss_notices ring
 * by the first record that finds no room in the CPU's ring after one that
 * did, before it is counted in `lost`. The losses this CPU counts from
 * `lost_before` on came at `timestamp_ns` or later, so the stream reports
 * them there, not at its own look at the counts, which a busy or starved
 * drain may take long after. */
struct pt_loss_notice {
    __u64 timestamp_ns; /* CLOCK_MONOTONIC, read before `lost_before` */
    __u64 lost_before;  /* the CPU's `lost` count before this loss */
    __u32 cpu;
    __u32 unused;
};

/* The loss notices of all CPUs: a notice is written once a run, so a few
 * hundred a drain pass at the very most. Full, a run goes without one and
 * is reported with the run before it on its CPU: earlier, never later. */
#define PT_LOSS_NOTICE_RING_BYTES (16u * 1024u)

/* Thread events, numbered as td_event_e in <posix_trace/thread_db.h>; the
 * event type id of TD event n is PT_TD_EVENT_ID_FIRST + n - 1. */
#define PT_TD_EVENT_ID_FIRST 16
enum pt_td_event {
    PT_TD_READY = 1, PT_TD_SLEEP, PT_TD_SWITCHTO, PT_TD_SWITCHFROM, PT_TD_LOCK_TRY,
    PT_TD_CATCHSIG, PT_TD_IDLE, PT_TD_CREATE, PT_TD_DEATH, PT_TD_PREEMPT,
    PT_TD_PRI_INHERIT, PT_TD_REAP, PT_TD_CONCURRENCY, PT_TD_TIMEOUT,
};
#define PT_TD_EVENT_COUNT 14

/* Payload of every thread event record (struct td_event_data in
 * <posix_trace/thread_db.h> is the same layout). */
struct pt_td_data {
    __s32 tid;          /* the thread the event is about */
    __u32 cpu;
    __u64 pthread_id;   /* its pthread_t: FS base on x86-64 */
    __u64 value;        /* the event's own value */
    __u64 value2;       /* a second value, per event */
    char name[16];      /* the thread's name (comm) at the event */
};

/* Threads a stream can hold TD masks and messages for. */
#define PT_MAX_TD_THREADS 65536

/* Per thread (key: tid): reporting enabled, and its event mask (bit n-1 for
 * TD event n). The kernel hands a tid out again once its thread is gone, so
 * an entry also says which thread it is about: `identity`, the inode number
 * of the thread's pidfd (pidfs, Linux 6.9+; unique while the system runs, 0
 * where unknown), and, once the thread exited, `exited_start`: its start
 * time | 1. A thread's last events (its final switch, td_reap) come after
 * it released its tid, when its pidfd inode can no longer be read. */
struct pt_td_thread {
    __u32 enabled;
    __u32 mask;
    __u64 identity;
    __u64 exited_start;
};

/* Per process (key: tgid): present once a thread agent controls it
 * (thread_db's reporting rule then applies), with its global event mask. */
struct pt_td_process {
    __u32 global_mask;
    __u32 unused;
};

/* A thread's one-slot event message buffer (key: tid). */
struct pt_td_message {
    __u32 tgid;
    __u32 event; /* enum pt_td_event */
    __u64 data;
};

/* ---- POSIX_TRACE_LOOP rings -------------------------------------------------
 * A BPF ring buffer drops its newest record when it is full, the opposite of
 * what a LOOP stream keeps. A LOOP stream's events go instead to one loop
 * ring per CPU that the programs write themselves, overwriting the oldest
 * records (lifecycle records stay in the BPF ring buffers: they are never
 * overwritten). A loop ring is an entry of an mmappable array: a page of
 * struct pt_loop_ring_meta, then the data, then room no record reaches
 * (the verifier's bound). Positions grow forever; a record sits at its
 * position modulo the data size, behind a struct pt_loop_header, and spans
 * a multiple of 16 bytes.
 * - A program reserves by compare-and-swap on `head`, before it stamps the
 *   record (as with a BPF ring buffer), writes the header busy, and clears
 *   the bit with an atomic operation once the record is whole.
 * - Between the reservation and the header, the reader would find the
 *   bytes of an older round there, which may be a traced process's data
 *   shaped as a header. A header counts only with its `tag`: its position
 *   XOR a random key of the stream that traced processes cannot read.
 * - No record crosses the end of a PT_LOOP_CHUNK_BYTES chunk: one that would
 *   starts at the next chunk, behind a discarded padding record marked
 *   PT_LOOP_PADDING. So every chunk begins with a record, where a reader
 *   overtaken by the writers starts again.
 * - Every other record takes the next number of `sequence` (its low 32
 *   bits in the header's second word), after its reservation: the reader
 *   counts what was overwritten exactly from the numbers it did not see.
 * - A reservation that begins a quarter of the ring discards an empty
 *   record in the CPU's BPF ring buffer, which wakes the drain. */
struct pt_loop_header {
    __u32 length;   /* of what follows; with BPF_RINGBUF_BUSY_BIT, _DISCARD_BIT, PT_LOOP_PADDING */
    __u32 sequence; /* the record's number (low 32 bits); none for padding */
    __u64 tag;      /* position ^ loop_tag_key, written after `length` */
};
struct pt_loop_ring_meta {
    __u64 head;     /* bytes reserved so far */
    __u64 sequence; /* records numbered so far */
};
#define PT_LOOP_META_BYTES 4096u
#define PT_LOOP_CHUNK_BYTES (16u * 1024u)
/* Past the data: the largest record (the two headers and
 * PT_DATA_SIZE_LIMIT bytes) fits, so every access the verifier sees is
 * within the entry. */
#define PT_LOOP_SLACK_BYTES (12u * 1024u)
#define PT_LOOP_PADDING (1u << 29)
/* Compare-and-swap attempts before a record counts as lost: each failure
 * is another program's reservation on the same CPU. */
#define PT_LOOP_RESERVE_TRIES 8

/* stream_state, written by userspace */
enum pt_stream_state {
    PT_STREAM_SUSPENDED = 0,
    PT_STREAM_RUNNING = 1,
    PT_STREAM_FULL = 2, /* stopped by POSIX_TRACE_UNTIL_FULL: refusals are counted */
};

#endif /* POSIXTRACE_BPF_SHARED_H */
