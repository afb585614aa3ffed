/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of posixtrace.bpf.c, the one BPF object of a stream: the programs that
 * make the thread events, on the scheduler, signal, PI and futex tracepoints. */
#ifndef POSIXTRACE_THREAD_EVENT_PROGRAMS_BPF_H
#define POSIXTRACE_THREAD_EVENT_PROGRAMS_BPF_H

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

#endif
