/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What a user would write with libbpf alone to record posix_trace_event()'s
 * 64 bytes from its USDT probe: libbpf's USDT support, one BPF ring buffer,
 * no wakeup per record. The reference the uprobe path of posixtrace is
 * measured against (bench/run.sh); `empty_event` is the floor. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

struct record {
    __u64 timestamp_ns;
    __u32 pid;
    __u32 tid;
    __u32 event_id;
    __u32 data_len;
    __u8 data[64];
};

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 16 << 20);
} records SEC(".maps");

__u64 lost;

SEC("usdt")
int BPF_USDT(copy_event, __u32 event_id, const void *data, __u64 data_len, void *caller)
{
    struct record *record = bpf_ringbuf_reserve(&records, sizeof *record, 0);
    __u64 pid_tgid = bpf_get_current_pid_tgid();

    if (!record) {
        __sync_fetch_and_add(&lost, 1);
        return 0;
    }
    record->timestamp_ns = bpf_ktime_get_ns();
    record->pid = pid_tgid >> 32;
    record->tid = (__u32)pid_tgid;
    record->event_id = event_id;
    record->data_len = data_len > 64 ? 64 : data_len;
    if (bpf_probe_read_user(record->data, sizeof record->data, data) != 0)
        record->data_len = 0;
    bpf_ringbuf_submit(record, BPF_RB_NO_WAKEUP);
    return 0;
}

SEC("usdt")
int BPF_USDT(empty_event)
{
    return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
