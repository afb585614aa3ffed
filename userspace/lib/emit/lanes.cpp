#include "emit/lanes.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>

#include "stream/ring_merger.hpp"
#include "util/clock.hpp"

namespace posixtrace {

std::atomic<uint32_t> lanes_in_use{0};

namespace {

constexpr size_t kLaneChunkBytes = 64 * 1024; // the largest record fits in one
constexpr uint32_t kLaneChunksAtMost = 65536; // 4 GiB of address space
// A lane's own most: 512 MiB in flight.
constexpr uint32_t kChunksOfOneLane = 8192;
static_assert(kLaneChunkBytes >= PT_DATA_SIZE_LIMIT + sizeof(pt_record) + 8);

} // namespace

// In a page of its own that a child of fork sees zeroed (MADV_WIPEONFORK):
// the lanes are the parent's, and so is the stream.
struct LaneControl {
    std::atomic<uint32_t> attached{0};
    std::atomic<uint32_t> state{PT_STREAM_SUSPENDED};
    std::atomic<uint64_t> filter[PT_FILTER_WORDS]{};
    // Changes at every attach and detach: a record reserved under one
    // stream is never committed under the next.
    std::atomic<uint64_t> generation{0};
    std::atomic<uint32_t> max_data_size{0};
    pid_t pid = 0; // the process the control is for; 0 in a child of fork
    std::atomic<Lane *> lanes{nullptr};
    std::atomic<uint64_t> no_lane{0};
    // Records a lane had no room for, or that were given up by their own
    // thread or at its exit: one counter, so the drain reads it in one load
    // whatever the number of lanes (each lane counts its own too).
    std::atomic<uint64_t> lost_records{0};
    std::atomic<uint64_t> refused_full{0};
    // The lanes' memory: what the attached stream allows, and a chunk for
    // each lane (an idle thread's lane holds one).
    ChunkPool chunks{kLaneChunkBytes, kLaneChunksAtMost};
};

namespace {

constexpr unsigned kNestingLevels = 4; // a thread, and signal handlers within
constexpr size_t kPageBytes = 4096;
static_assert(sizeof(LaneControl) <= kPageBytes);

std::atomic<LaneControl *> control_page{nullptr};
std::mutex attach_mutex;

// The calling thread's lanes, one per nesting level, and the calls in
// progress: the call at level L keeps a token in its own stack frame, and
// its address and value here, so a later call can tell whether it still
// runs (docs/architecture.md, "Lanes").
struct ThreadLanes {
    pid_t pid; // the process the lanes are of (another: before a fork)
    pid_t tid;
    unsigned depth; // the levels in use: calls in progress, or left through siglongjmp
    uint64_t calls;
    Lane *lane[kNestingLevels];
    const volatile uint64_t *token_at[kNestingLevels];
    uint64_t token[kNestingLevels];
    // The CPU time this thread spent in fork() (a signal handler may fork
    // on top of a call): what the kernel spends copying a large process is
    // no sign of a stalled record. Written before `forking` is cleared.
    uint64_t fork_cpu_ns;
    uint64_t fork_started_ns;
    uint32_t forking;
};
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

bool filtered(const LaneControl &control, trace_event_id_t id)
{
    return (control.filter[id / 64].load(std::memory_order_relaxed) >> (id % 64)) & 1;
}

// The loads after a clock read are not done before it (rdtsc does not wait
// for them; lfence does).
void after_clock_read()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_lfence();
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
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
    pt_record *record = lane->ring.reserve(uint32_t(copy_len));
    if (!record) {
        control.lost_records.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    record->timestamp_ns = stamp_now();
    state = control.state.load(std::memory_order_acquire);
    if (state != PT_STREAM_RUNNING || filtered(control, id) ||
        control.generation.load(std::memory_order_acquire) != generation) {
        if (state == PT_STREAM_FULL && !filtered(control, id) &&
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

// Reads `bytes` at `address` in process `pid` (this one), without faulting
// where nothing is mapped there (a frame on a signal stack since unmapped,
// the state of a thread that is gone): 0 when all of them were read, else
// why not. A short read stopped at a page that is not mapped: EFAULT, which
// errno does not say then.
int read_error(pid_t pid, const void *address, void *into, size_t bytes)
{
    iovec local{into, bytes};
    iovec remote{const_cast<void *>(address), bytes};
    ssize_t read = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (read == ssize_t(bytes))
        return 0;
    return read < 0 ? errno : EFAULT;
}

// read_error(), as whether all of them were read.
bool read_safely(pid_t pid, const void *address, void *into, size_t bytes)
{
    return read_error(pid, address, into, bytes) == 0;
}

// Whether the call whose frame is at `frame` still runs: the frame still
// holds the call's token.
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

// ---- the stream's side ---------------------------------------------------

// Under attach_mutex. The control of this process, mapped on first use and
// made new in a child of fork (whose copy reads zero).
LaneControl *control_of_this_process()
{
    LaneControl *control = control_page.load(std::memory_order_acquire);
    if (!control) {
        void *page =
            mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            return nullptr;
        if (madvise(page, kPageBytes, MADV_WIPEONFORK) != 0) {
            munmap(page, kPageBytes);
            return nullptr;
        }
        control = new (page) LaneControl;
        control_page.store(control, std::memory_order_release);
    }
    if (control->pid != getpid()) {
        control = new (control) LaneControl;
        control->pid = getpid();
    }
    return control;
}

// CPU time the thread has run, from its thread CPU clock (the clock id
// pthread_getcpuclockid() makes from a tid); 0 if it cannot be read.
uint64_t cpu_time_of(pid_t tid)
{
    const clockid_t thread_clock = clockid_t((~unsigned(tid) << 3) | 6); // per thread, sched
    timespec ran;
    return clock_gettime(thread_clock, &ran) == 0 ? to_nanos(ran) : 0;
}

// The stack pointer of the thread, if it is blocked in a system call other
// than those the emit path can make while a record is busy (vDSO
// fallbacks); 0 if not.
uint64_t stack_pointer_if_blocked_in_other_syscall(pid_t tid)
{
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char text[256] = {};
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got <= 0 || text[0] < '0' || text[0] > '9') // "running", or -1: not in a call
        return 0;
    long number = 0;
    unsigned long stack_pointer = 0; // "NR ARG1 ... ARG6 SP PC"
    if (std::sscanf(text, "%ld %*x %*x %*x %*x %*x %*x %lx", &number, &stack_pointer) != 2)
        return 0;
    if (number == SYS_clock_gettime || number == SYS_gettimeofday || number == SYS_getcpu)
        return 0;
    return stack_pointer;
}

// Whether the call that holds the lane's busy record is still in progress
// while its thread, blocked in a system call at `stack_pointer`, runs a
// signal handler on top of it: the call's token is in place in its frame
// and the thread's stack is below that frame (on the same stack, or on an
// alternate signal stack mapped below it). A thread that left the call
// through siglongjmp runs above the frame, or wrote over the token.
bool interrupted_call_in_progress(pid_t pid, const Lane &lane, uint64_t stack_pointer)
{
    const auto *calls = static_cast<const ThreadLanes *>(lane.owner_calls.load());
    unsigned level = lane.owner_level.load();
    const volatile uint64_t *frame = nullptr;
    uint64_t token = 0;
    // The owner's state is read safely too: the owner may have exited.
    if (!calls || level >= kNestingLevels ||
        !read_safely(pid, &calls->token_at[level], &frame, sizeof frame) ||
        !read_safely(pid, &calls->token[level], &token, sizeof token))
        return false;
    return stack_pointer <= reinterpret_cast<uintptr_t>(frame) && token_in_place(pid, frame, token);
}

// A lane as the merge reads it. A record its thread left busy for good (a
// signal handler that interrupted posix_trace_event() left through
// siglongjmp, and the thread has not emitted since from where it would
// notice) is given up and counted lost, so the merge goes on: once the
// owner has run kStalledCpuNs of CPU time, or is blocked in a system call
// away from the call, while the record stayed busy. A writer needs
// microseconds; a preempted or stopped one runs no CPU time, a signal
// handler blocked on top of the call will return to it, and one in fork()
// (whose CPU time grows with the process's size) too: all are waited for.
class LaneView final : public RecordRing {
public:
    LaneView(Lane &lane, pid_t pid) : lane_(lane), pid_(pid) { view_like(lane.ring); }

    bool in_timestamp_order() const override { return true; }

    void release(uint64_t position) override
    {
        lane_.ring.hand_back_chunks_before(position);
        RecordRing::release(position);
    }

    bool give_up_stalled(uint64_t position) override
    {
        pid_t owner = lane_.owner.load(std::memory_order_acquire);
        if (owner == 0)
            return false;
        // The clock first: a fork that began after it is not in it, one
        // that ended before the fork count is read is in both.
        uint64_t ran = cpu_time_of(owner);
        auto in_fork = owner_fork_cpu();
        if (!in_fork) // in fork() now: waited for
            return false;
        ran -= std::min(ran, *in_fork);
        if (watched_position_ != position || watched_owner_ != owner) { // first look at it
            watched_position_ = position;
            watched_owner_ = owner;
            watched_owner_cpu_ns_ = ran;
            return false;
        }
        if (ran < watched_owner_cpu_ns_ + kStalledCpuNs) {
            uint64_t blocked_at = stack_pointer_if_blocked_in_other_syscall(owner);
            if (!blocked_at || interrupted_call_in_progress(pid_, lane_, blocked_at))
                return false;
        }
        return lane_.ring.give_up_reported_by_reader(position);
    }

private:
    // The CPU time the owner spent in fork() until now; nullopt while it forks.
    std::optional<uint64_t> owner_fork_cpu() const
    {
        const auto *calls = static_cast<const ThreadLanes *>(lane_.owner_calls.load());
        uint32_t forking = 0;
        uint64_t fork_cpu = 0;
        if (!calls)
            return 0;
        if (read_safely(pid_, &calls->forking, &forking, sizeof forking) && forking)
            return std::nullopt;
        read_safely(pid_, &calls->fork_cpu_ns, &fork_cpu, sizeof fork_cpu);
        return fork_cpu;
    }

    static constexpr uint64_t kStalledCpuNs = 10'000'000;
    Lane &lane_;
    pid_t pid_; // the lanes' process
    uint64_t watched_position_ = UINT64_MAX;
    pid_t watched_owner_ = 0;
    uint64_t watched_owner_cpu_ns_ = 0;
};

// What a lane holds is an earlier stream's: skipped. A lane no thread holds
// (tid -1 meanwhile, so none takes it) keeps no chunk.
void skip_earlier_records(Lane &lane)
{
    pid_t free = 0;
    if (!lane.owner.compare_exchange_strong(free, -1, std::memory_order_acquire)) {
        lane.ring.skip_unread();
        return;
    }
    lane.ring.close_chunk();
    lane.ring.skip_unread(true);
    lane.owner.store(0, std::memory_order_release);
}

// The lanes' list is read after the clock: see adopt_new_lanes().
Lane *lanes_listed_after_clock(const LaneControl &control)
{
    after_clock_read();
    return control.lanes.load(std::memory_order_acquire);
}

} // namespace

namespace {

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
        event_id < PT_EVENT_USER_FIRST || event_id >= PT_EVENT_USDT_FIRST)
        return;
    // What a suspended stream or a filtered event costs: these loads (both
    // are read again once the record is stamped).
    uint32_t state = control->state.load(std::memory_order_acquire);
    if (state == PT_STREAM_SUSPENDED || filtered(*control, event_id))
        return;
    emit_recorded(control, state, event_id, data, data_len, caller);
}

LaneAttachment::LaneAttachment(LaneControl &control) : control_(control) {}

std::unique_ptr<LaneAttachment> LaneAttachment::attach(size_t budget_bytes, uint32_t max_data_size,
                                                       RingMerger &merger, uint64_t now_ns)
{
    std::lock_guard lock(attach_mutex);
    LaneControl *control = control_of_this_process();
    if (!control || !control->chunks.valid() || control->attached.load(std::memory_order_relaxed))
        return nullptr;
    control->max_data_size.store(std::min<uint32_t>(max_data_size, PT_DATA_SIZE_LIMIT),
                                 std::memory_order_relaxed);
    control->state.store(PT_STREAM_SUSPENDED, std::memory_order_relaxed);
    for (auto &word : control->filter)
        word.store(0, std::memory_order_relaxed);
    control->generation.fetch_add(1, std::memory_order_seq_cst);

    auto attachment = std::make_unique<LaneAttachment>(*control);
    attachment->budget_chunks_ =
        std::min<size_t>(budget_bytes / kLaneChunkBytes, kLaneChunksAtMost);
    attachment->reclaim_lanes_of_exited_threads();
    attachment->lost_before_ = attachment->lost();
    attachment->refused_before_ = attachment->refused_while_full();
    attachment->listed_after_ns_ = now_ns;
    Lane *head = lanes_listed_after_clock(*control);
    for (Lane *lane = head; lane; lane = lane->next) {
        skip_earlier_records(*lane);
        merger.add_ring(std::make_unique<LaneView>(*lane, control->pid), now_ns);
    }
    attachment->adopted_head_ = head;
    control->attached.store(1, std::memory_order_release);
    lanes_in_use.store(1, std::memory_order_release);
    return attachment;
}

LaneAttachment::~LaneAttachment()
{
    std::lock_guard lock(attach_mutex);
    control_.state.store(PT_STREAM_SUSPENDED, std::memory_order_seq_cst);
    control_.generation.fetch_add(1, std::memory_order_seq_cst);
    control_.attached.store(0, std::memory_order_release);
    lanes_in_use.store(0, std::memory_order_release);
    control_.chunks.release_free_pages(); // a burst's memory is not kept for the next stream
}

void LaneAttachment::set_state(pt_stream_state state)
{
    control_.state.store(uint32_t(state), std::memory_order_seq_cst);
}

void LaneAttachment::set_filter(const trace_event_set_t &filtered)
{
    static_assert(sizeof(filtered.__bits) == sizeof(control_.filter));
    for (size_t i = 0; i < std::size(control_.filter); ++i)
        control_.filter[i].store(uint64_t(filtered.__bits[i]), std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst); // before the caller's stamp
}

void LaneAttachment::adopt_new_lanes(RingMerger &merger, uint64_t now_ns)
{
    // A lane not listed at the previous reading was published after it, so
    // after the clock read before it: its records are stamped later.
    Lane *head = lanes_listed_after_clock(control_);
    for (Lane *lane = head; lane != adopted_head_; lane = lane->next)
        merger.add_ring(std::make_unique<LaneView>(*lane, control_.pid), listed_after_ns_);
    adopted_head_ = head;
    listed_after_ns_ = now_ns;
}

size_t LaneAttachment::reclaim_lanes_of_exited_threads()
{
    size_t owned = 0;
    for (Lane *lane = control_.lanes.load(std::memory_order_acquire); lane; lane = lane->next) {
        pid_t owner = lane->owner.load(std::memory_order_acquire);
        if (owner == 0)
            continue;
        if (syscall(SYS_tgkill, control_.pid, owner, 0) == 0 || errno != ESRCH) {
            ++owned;
            continue;
        }
        control_.lost_records.fetch_add(lane->ring.abandon_unfinished(), std::memory_order_relaxed);
        // Held (tid -1) while its chunk is closed, so that the chunk goes
        // back once read and an idle lane holds none.
        if (lane->owner.compare_exchange_strong(owner, -1, std::memory_order_acquire)) {
            lane->ring.close_chunk();
            lane->owner.store(0, std::memory_order_release);
        }
    }
    // The stream's budget, and the chunk each live thread's lane holds (a
    // thread that takes a lane later adds its own: new_lane()).
    control_.chunks.allow(uint32_t(budget_chunks_ + owned));
    return owned;
}

uint64_t LaneAttachment::lost() const
{
    return control_.no_lane.load(std::memory_order_relaxed) +
           control_.lost_records.load(std::memory_order_relaxed) - lost_before_;
}

uint64_t LaneAttachment::refused_while_full() const
{
    return control_.refused_full.load(std::memory_order_relaxed) - refused_before_;
}

} // namespace posixtrace
