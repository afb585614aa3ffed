#include "emit/lanes.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "stream/ring_merger.hpp"
#include "util/clock.hpp"

namespace posixtrace {

std::atomic<uint32_t> lanes_in_use{0};

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
    std::atomic<size_t> lane_bytes{0};
    pid_t pid = 0; // the process the control is for; 0 in a child of fork
    std::atomic<Lane *> lanes{nullptr};
    std::atomic<uint64_t> no_lane{0};
    std::atomic<uint64_t> refused_full{0};
};

namespace {

constexpr unsigned kNestingLevels = 4; // a thread, and signal handlers within
constexpr size_t kPageBytes = 4096;
static_assert(sizeof(LaneControl) <= kPageBytes);

std::atomic<LaneControl *> control_page{nullptr};
std::mutex attach_mutex;

// The calling thread's lanes, one per nesting level.
struct ThreadLanes {
    pid_t pid; // the process the lanes are of (another: before a fork)
    pid_t tid;
    unsigned depth;
    Lane *lane[kNestingLevels];
};
constinit thread_local ThreadLanes this_thread_lanes
    __attribute__((tls_model("initial-exec"))) = {};

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
            lane->ring.bytes() == control.lane_bytes.load(std::memory_order_relaxed) &&
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
    auto *lane = new (memory) Lane(control.lane_bytes.load(std::memory_order_relaxed));
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
    if (me.pid != control.pid) { // the thread's first event in this process
        me.tid = pid_t(syscall(SYS_gettid));
        std::fill(std::begin(me.lane), std::end(me.lane), nullptr);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        me.pid = control.pid;
    }
    // A lane sized for an earlier stream is given up for one of this
    // stream's size (it holds nothing of this stream: see attach()).
    if (Lane *held = me.lane[depth];
        held && held->ring.bytes() != control.lane_bytes.load(std::memory_order_relaxed)) {
        me.lane[depth] = nullptr;
        held->owner.store(0, std::memory_order_release);
    }
    if (!me.lane[depth]) {
        Lane *lane = take_free_lane(control, me.tid);
        me.lane[depth] = lane ? lane : new_lane(control, me.tid);
    }
    return me.lane[depth];
}

// As the kernel's user_event program does: the checks, a reservation, the
// stamp, the checks again (a record stamped after a stop or a filter change
// took effect is discarded), then the record.
void record_in_lane(LaneControl &control, ThreadLanes &me, unsigned depth, trace_event_id_t id,
                    const void *data, size_t data_len, void *caller)
{
    uint32_t state = control.state.load(std::memory_order_acquire);
    if (state == PT_STREAM_SUSPENDED || filtered(control, id))
        return;
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
    if (!record)
        return; // counted by the lane
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
    record->reserved = 0;
    record->flags = flags;
    int cpu = sched_getcpu();
    record->cpu = uint16_t(cpu < 0 ? 0 : cpu);
    if (copy_len)
        std::memcpy(record->data, data, copy_len);
    lane->ring.commit(record);
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

class LaneView final : public RecordRing {
public:
    explicit LaneView(const LocalRing &ring) { view_like(ring); }
};

// The lanes' list is read after the clock: see adopt_new_lanes().
Lane *lanes_listed_after_clock(const LaneControl &control)
{
    after_clock_read();
    return control.lanes.load(std::memory_order_acquire);
}

} // namespace

void emit_to_lanes(trace_event_id_t event_id, const void *data, size_t data_len, void *caller)
{
    LaneControl *control = control_page.load(std::memory_order_acquire);
    if (!control || !control->attached.load(std::memory_order_acquire) ||
        event_id < PT_EVENT_USER_FIRST || event_id >= PT_EVENT_USDT_FIRST)
        return;
    ThreadLanes &me = this_thread_lanes;
    unsigned depth = me.depth;
    me.depth = depth + 1; // a signal handler that emits now takes the next lane
    std::atomic_signal_fence(std::memory_order_seq_cst);
    record_in_lane(*control, me, depth, event_id, data, data_len, caller);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    me.depth = depth;
}

LaneAttachment::LaneAttachment(LaneControl &control) : control_(control) {}

std::unique_ptr<LaneAttachment> LaneAttachment::attach(size_t lane_bytes, uint32_t max_data_size,
                                                       RingMerger &merger, uint64_t now_ns)
{
    std::lock_guard lock(attach_mutex);
    LaneControl *control = control_of_this_process();
    if (!control || control->attached.load(std::memory_order_relaxed))
        return nullptr;
    control->lane_bytes.store(lane_bytes, std::memory_order_relaxed);
    control->max_data_size.store(std::min<uint32_t>(max_data_size, PT_DATA_SIZE_LIMIT),
                                 std::memory_order_relaxed);
    control->state.store(PT_STREAM_SUSPENDED, std::memory_order_relaxed);
    for (auto &word : control->filter)
        word.store(0, std::memory_order_relaxed);
    control->generation.fetch_add(1, std::memory_order_seq_cst);

    auto attachment = std::make_unique<LaneAttachment>(*control);
    attachment->lost_before_ = attachment->lost();
    attachment->refused_before_ = attachment->refused_while_full();
    attachment->listed_after_ns_ = now_ns;
    Lane *head = lanes_listed_after_clock(*control);
    for (Lane *lane = head; lane; lane = lane->next) {
        lane->ring.skip_unread(); // an earlier stream's
        merger.add_ring(std::make_unique<LaneView>(lane->ring), now_ns);
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
        merger.add_ring(std::make_unique<LaneView>(lane->ring), listed_after_ns_);
    adopted_head_ = head;
    listed_after_ns_ = now_ns;
}

void LaneAttachment::reclaim_lanes_of_exited_threads()
{
    for (Lane *lane = control_.lanes.load(std::memory_order_acquire); lane; lane = lane->next) {
        pid_t owner = lane->owner.load(std::memory_order_acquire);
        if (owner == 0 || syscall(SYS_tgkill, control_.pid, owner, 0) == 0 || errno != ESRCH)
            continue;
        lane->ring.abandon_unfinished();
        lane->owner.compare_exchange_strong(owner, 0, std::memory_order_release);
    }
}

uint64_t LaneAttachment::lost() const
{
    uint64_t lost = control_.no_lane.load(std::memory_order_relaxed);
    for (Lane *lane = control_.lanes.load(std::memory_order_acquire); lane; lane = lane->next)
        lost += lane->ring.lost();
    return lost - lost_before_;
}

uint64_t LaneAttachment::refused_while_full() const
{
    return control_.refused_full.load(std::memory_order_relaxed) - refused_before_;
}

} // namespace posixtrace
