// The emit path of the lanes: what posix_trace_event() runs in the emitting
// thread. Async-signal-safe throughout; the stream's side is in
// sources/lanes/lane_source.cpp.
#include "emit/lanes.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "emit/lane_state.hpp"
#include "util/clock.hpp"

namespace posixtrace {

constinit LaneGate lane_gate;
std::atomic<LaneControl *> control_page{nullptr};
std::mutex attach_mutex;

int read_error(pid_t pid, const void *address, void *into, size_t bytes)
{
    iovec local{into, bytes};
    iovec remote{const_cast<void *>(address), bytes};
    ssize_t read = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (read == ssize_t(bytes))
        return 0;
    return read < 0 ? errno : EFAULT;
}

bool read_safely(pid_t pid, const void *address, void *into, size_t bytes)
{
    return read_error(pid, address, into, bytes) == 0;
}

bool token_in_place(pid_t pid, const volatile uint64_t *frame, uint64_t token)
{
    uint64_t seen = 0;
    if (!frame)
        return false;
    int error = read_error(pid, const_cast<const uint64_t *>(frame), &seen, sizeof seen);
    if (error == 0)
        return seen == token;
    return error != EFAULT; // not allowed to look (seccomp): assume it runs
}

namespace {

constinit thread_local ThreadLanes this_thread_lanes
    __attribute__((tls_model("initial-exec"))) = {};

uint64_t this_thread_cpu_ns()
{
    timespec ran;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ran);
    return uint64_t(ran.tv_sec) * 1'000'000'000 + uint64_t(ran.tv_nsec);
}

void fork_begins()
{
    this_thread_lanes.fork_started_ns = this_thread_cpu_ns();
    __atomic_store_n(&this_thread_lanes.forking, 1u, __ATOMIC_RELEASE);
}

void fork_ended_in_parent()
{
    ThreadLanes &me = this_thread_lanes;
    __atomic_store_n(&me.fork_cpu_ns, me.fork_cpu_ns + (this_thread_cpu_ns() - me.fork_started_ns),
                     __ATOMIC_RELEASE);
    __atomic_store_n(&me.forking, 0u, __ATOMIC_RELEASE);
}

const bool forks_watched = [] {
    pthread_atfork(fork_begins, fork_ended_in_parent,
                   [] { __atomic_store_n(&this_thread_lanes.forking, 0u, __ATOMIC_RELAXED); });
    return true;
}();

// ---- the emit path -------------------------------------------------------

bool filtered(trace_event_id_t id)
{
    return lane_gate.shut_for(id);
}

// CLOCK_MONOTONIC, as bpf_ktime_get_ns reads it. The state read after the
// stamp decides whether the record precedes a stop.
uint64_t stamp_now()
{
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    after_clock_read();
    return to_nanos(now);
}

Lane *take_free_lane(LaneControl &control, pid_t tid)
{
    for (Lane *lane = control.lanes.load(std::memory_order_acquire); lane; lane = lane->next) {
        pid_t free = 0;
        if (lane->owner.load(std::memory_order_relaxed) == 0 &&
            lane->owner.compare_exchange_strong(free, tid, std::memory_order_acquire))
            return lane;
    }
    return nullptr;
}

// Mapped, never unmapped: the process's lanes outlive every stream.
// Async-signal-safe: system calls only.
Lane *new_lane(LaneControl &control, pid_t tid)
{
    void *memory =
        mmap(nullptr, sizeof(Lane), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
        return nullptr;
    auto *lane = new (memory) Lane(control.chunks, kChunksOfOneLane);
    if (!lane->ring.mapped()) {
        lane->~Lane();
        munmap(memory, sizeof(Lane));
        return nullptr;
    }
    lane->owner.store(tid, std::memory_order_relaxed);
    Lane *head = control.lanes.load(std::memory_order_relaxed);
    do {
        lane->next = head;
    } while (!control.lanes.compare_exchange_weak(head, lane, std::memory_order_release,
                                                  std::memory_order_relaxed));
    return lane;
}

Lane *lane_of(LaneControl &control, ThreadLanes &me, unsigned depth)
{
    if (!me.lane[depth]) {
        Lane *lane = take_free_lane(control, me.tid);
        if (!lane)
            lane = new_lane(control, me.tid);
        if (lane) {
            lane->owner_calls.store(&me, std::memory_order_relaxed);
            lane->owner_level.store(depth, std::memory_order_relaxed);
            control.chunks.allow_one_more(); // the chunk a lane holds, beyond the stream's
        }
        me.lane[depth] = lane;
    }
    return me.lane[depth];
}

// As the kernel's user_event program does: the checks (the caller's read of
// `state` and the filter passed them), a reservation, the stamp, the checks
// again (a record stamped after a stop or a filter change took effect is
// discarded), then the record.
void record_in_lane(LaneControl &control, uint32_t state, ThreadLanes &me, unsigned depth,
                    trace_event_id_t id, const void *data, size_t data_len, void *caller)
{
    if (state == PT_STREAM_FULL) {
        control.refused_full.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    uint64_t generation = control.generation.load(std::memory_order_acquire);
    Lane *lane = depth < kNestingLevels ? lane_of(control, me, depth) : nullptr;
    if (!lane) {
        control.no_lane.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    uint16_t flags = 0;
    size_t copy_len = data_len;
    if (size_t most = control.max_data_size.load(std::memory_order_relaxed); copy_len > most) {
        copy_len = most;
        flags |= PT_RECORD_TRUNCATED;
    }
    if (copy_len && !data) {
        copy_len = 0;
        flags |= PT_RECORD_DATA_FAULT;
    }
    pt_record *record = lane->ring.reserve(uint32_t(copy_len), &control.chunk_rules);
    if (!record) {
        control.lost_records.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    record->timestamp_ns = stamp_now();
    state = control.state.load(std::memory_order_acquire);
    if (state != PT_STREAM_RUNNING || filtered(id) ||
        control.generation.load(std::memory_order_acquire) != generation) {
        if (state == PT_STREAM_FULL && !filtered(id) &&
            control.generation.load(std::memory_order_relaxed) == generation)
            control.refused_full.fetch_add(1, std::memory_order_relaxed);
        lane->ring.discard(record);
        return;
    }
    record->thread_id = uint64_t(pthread_self());
    record->prog_address = reinterpret_cast<uint64_t>(caller);
    record->pid = uint32_t(control.pid);
    record->tid = uint32_t(me.tid);
    record->event_id = id;
    record->data_len = uint32_t(copy_len);
    record->image = PT_IMAGE_NONE;
    record->flags = flags;
    int cpu = sched_getcpu();
    record->cpu = uint16_t(cpu < 0 ? 0 : cpu);
    if (copy_len)
        std::memcpy(record->data, data, copy_len);
    lane->ring.commit(record);
}

// The thread's first event in this process (or the first since a fork,
// whose child inherits the parent's thread-local state).
void first_event_in_process(ThreadLanes &me, pid_t pid)
{
    me.depth = 0;
    me.tid = pid_t(syscall(SYS_gettid));
    std::fill(std::begin(me.lane), std::end(me.lane), nullptr);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    me.pid = pid;
}

// Whether the call at `level` still runs.
bool still_running(const ThreadLanes &me, pid_t pid, unsigned level)
{
    return token_in_place(pid, me.token_at[level], me.token[level]);
}

// A signal handler that interrupted posix_trace_event() and left through
// siglongjmp leaves its level in use, and perhaps a record busy in its
// lane, for good. The levels whose call is gone are taken back here, and
// their busy records discarded and counted lost: their writer is gone, and
// it was this thread. A frame that is gone can still hold its token (if
// nothing overwrote that stack since): then the level stays in use, and the
// drain gives the record up (LaneView::give_up_stalled).
unsigned levels_still_in_use(ThreadLanes &me, pid_t pid, unsigned depth)
{
    while (depth > 0 && !still_running(me, pid, depth - 1)) {
        --depth;
        LaneControl *control = control_page.load(std::memory_order_acquire);
        if (depth < kNestingLevels && me.lane[depth] && control)
            control->lost_records.fetch_add(me.lane[depth]->ring.abandon_unfinished(),
                                            std::memory_order_relaxed);
        me.depth = depth;
    }
    return depth;
}

// Out of line: its registers are saved only by a call that records.
[[gnu::noinline]] void emit_recorded(LaneControl *control, uint32_t state,
                                     trace_event_id_t event_id, const void *data, size_t data_len,
                                     void *caller)
{
    ThreadLanes &me = this_thread_lanes;
    if (me.pid != control->pid)
        first_event_in_process(me, control->pid);
    unsigned depth = me.depth;
    if (depth != 0)
        depth = levels_still_in_use(me, control->pid, depth);
    if (depth >= kNestingLevels) { // counted, as no lane
        record_in_lane(*control, state, me, depth, event_id, data, data_len, caller);
        return;
    }
    // This call's token, in its frame; published before the level is taken,
    // and checked after: a handler that ran in between took this level for
    // itself (it saw it free) and overwrote the token.
    volatile uint64_t token;
    do {
        token = ++me.calls ^ reinterpret_cast<uintptr_t>(&me);
        me.token_at[depth] = &token;
        me.token[depth] = token;
        std::atomic_signal_fence(std::memory_order_seq_cst);
        me.depth = depth + 1; // a signal handler that emits now takes the next lane
        std::atomic_signal_fence(std::memory_order_seq_cst);
    } while (me.token_at[depth] != &token || me.token[depth] != token);
    record_in_lane(*control, state, me, depth, event_id, data, data_len, caller);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    me.depth = depth;
}

} // namespace

void emit_to_lanes(trace_event_id_t event_id, const void *data, size_t data_len, void *caller)
{
    LaneControl *control = control_page.load(std::memory_order_acquire);
    if (!control || !control->attached.load(std::memory_order_acquire) ||
        event_id < PT_EVENT_USER_FIRST)
        return;
    // A suspended stream's calls stop at the gate, but for one that read it
    // just before it closed (the state and the filter are read again once
    // the record is stamped).
    uint32_t state = control->state.load(std::memory_order_acquire);
    if (state == PT_STREAM_SUSPENDED)
        return;
    emit_recorded(control, state, event_id, data, data_len, caller);
}

} // namespace posixtrace
