// The stream's side of the lanes (emit/lanes.hpp): attaching the process's
// lanes to the one stream that takes them, reading them in the merge, and
// giving back what threads that exited or stalled left.
#include "sources/lanes/lane_source.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <new>
#include <optional>

#include "emit/lane_state.hpp"
#include "stream/ring_merger.hpp"
#include "util/clock.hpp"

namespace posixtrace {
namespace {

// Lanes of threads that exited, and records left busy by a thread that will
// not finish them, are looked for this often; past kLanesCheckedEachPeriod
// lanes in use, exited threads less often in proportion (a system call a
// lane: a thousand idle threads would cost the drain a tenth of a CPU).
constexpr uint64_t kReclaimPeriodNs = 20'000'000;
constexpr uint64_t kLanesCheckedEachPeriod = 100;

// Under attach_mutex. The eventfd that wakes a dozing drain, made once a
// process: a child of fork closes the copy of its parent's, so that its
// writers never wake the parent. Kept open for good (LaneControl).
int drain_wakeup_fd_of_this_process()
{
    static int fd = -1;
    static pid_t made_by = 0;
    if (made_by != getpid()) {
        if (fd >= 0)
            close(fd);
        fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        made_by = fd >= 0 ? getpid() : 0;
    }
    return fd;
}

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
    control->chunk_rules.reader_wakeup_fd = drain_wakeup_fd_of_this_process();
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
    LaneView(Lane &lane, const LaneControl &control) : lane_(lane), control_(control)
    {
        view_like(lane.ring);
    }

    bool in_timestamp_order() const override { return true; }
    // A window at a time only while its writer may take records back.
    Readable readable(uint64_t &scanned) override
    {
        bool overwriting = control_.chunk_rules.after_bytes.load(std::memory_order_relaxed) != 0;
        return lane_.ring.readable_within(scanned, overwriting ? LocalRing::kClaimedAhead
                                                               : LocalRing::kWhole);
    }

    uint64_t chunk_bytes() const override { return lane_.ring.chunk_bytes(); }
    std::optional<LentChunk> lend_chunk(uint64_t position) override
    {
        return lane_.ring.lend_chunk(position);
    }

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
            if (!blocked_at || interrupted_call_in_progress(control_.pid, lane_, blocked_at))
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
        if (read_safely(control_.pid, &calls->forking, &forking, sizeof forking) && forking)
            return std::nullopt;
        read_safely(control_.pid, &calls->fork_cpu_ns, &fork_cpu, sizeof fork_cpu);
        return fork_cpu;
    }

    static constexpr uint64_t kStalledCpuNs = 10'000'000;
    Lane &lane_;
    const LaneControl &control_; // control_.pid: the lanes' process
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

// What a lane of a LOOP stream holds before it takes back its own oldest
// chunk rather than one of the pool's: no more than the stream keeps (its
// records take as many bytes there), and no more than a quarter of the
// lanes' budget, so that four threads bursting at once each keep their
// share of the pool; besides the chunk it writes and the one the merge
// reads. More only makes the drain deliver, under the lock a reader on
// getnext waits for, records that the stream overwrites before the reader
// gets them. 0: never (not LOOP).
uint64_t overwrite_after(uint64_t loop_kept_bytes, size_t budget_bytes)
{
    if (!loop_kept_bytes)
        return 0;
    return std::min<uint64_t>(loop_kept_bytes, budget_bytes / 4) + 2 * kLaneChunkBytes;
}

// The lanes' list is read after the clock: see adopt_new_lanes().
Lane *lanes_listed_after_clock(const LaneControl &control)
{
    after_clock_read();
    return control.lanes.load(std::memory_order_acquire);
}

} // namespace

LaneSource::LaneSource(LaneControl &control) : control_(control) {}

std::unique_ptr<LaneSource> LaneSource::attach(size_t budget_bytes, uint32_t max_data_size,
                                               uint64_t loop_kept_bytes, RingMerger &merger,
                                               uint64_t now_ns)
{
    std::lock_guard lock(attach_mutex);
    LaneControl *control = control_of_this_process();
    if (!control || !control->chunks.valid() || control->chunk_rules.reader_wakeup_fd < 0 ||
        control->attached.load(std::memory_order_relaxed))
        return nullptr;
    control->max_data_size.store(std::min<uint32_t>(max_data_size, PT_DATA_SIZE_LIMIT),
                                 std::memory_order_relaxed);
    control->state.store(PT_STREAM_SUSPENDED, std::memory_order_relaxed);
    for (auto &word : lane_gate.filtered)
        word.store(0, std::memory_order_relaxed);
    control->generation.fetch_add(1, std::memory_order_seq_cst);

    auto source = std::make_unique<LaneSource>(*control);
    source->budget_chunks_ = std::min<size_t>(budget_bytes / kLaneChunkBytes, kLaneChunksAtMost);
    source->reclaim_lanes_of_exited_threads();
    source->lost_before_ = source->lost();
    source->refused_before_ = source->refused_while_full();
    source->overwritten_before_ = source->overwritten();
    source->listed_after_ns_ = now_ns;
    Lane *head = lanes_listed_after_clock(*control);
    for (Lane *lane = head; lane; lane = lane->next) {
        skip_earlier_records(*lane);
        merger.add_ring(std::make_unique<LaneView>(*lane, *control), now_ns);
    }
    source->adopted_head_ = head;
    // Once the lanes are skipped: what a writer takes back from here on is
    // this stream's.
    control->chunk_rules.after_bytes.store(overwrite_after(loop_kept_bytes, budget_bytes),
                                           std::memory_order_relaxed);
    control->attached.store(1, std::memory_order_release); // still suspended
    return source;
}

LaneSource::~LaneSource()
{
    std::lock_guard lock(attach_mutex);
    control_.state.store(PT_STREAM_SUSPENDED, std::memory_order_seq_cst);
    control_.generation.fetch_add(1, std::memory_order_seq_cst);
    control_.chunk_rules.reader_dozing.store(0, std::memory_order_relaxed);
    control_.chunk_rules.after_bytes.store(0, std::memory_order_relaxed);
    control_.attached.store(0, std::memory_order_release);
    lane_gate.open.store(0, std::memory_order_release);
    control_.chunks.release_free_pages(); // a burst's memory is not kept for the next stream
}

std::vector<int> LaneSource::readable_fds() const
{
    return {control_.chunk_rules.reader_wakeup_fd};
}

void LaneSource::doze()
{
    uint64_t count;
    [[maybe_unused]] ssize_t got = read(control_.chunk_rules.reader_wakeup_fd, &count,
                                        sizeof count); // the wakes since the last doze
    control_.chunk_rules.reader_dozing.store(1, std::memory_order_seq_cst);
}

// The state first: a call that finds the fast path open reads it again.
void LaneSource::set_state(pt_stream_state state)
{
    control_.state.store(uint32_t(state), std::memory_order_seq_cst);
    lane_gate.open.store(state != PT_STREAM_SUSPENDED, std::memory_order_seq_cst);
}

void LaneSource::set_filter(const trace_event_set_t &filtered)
{
    static_assert(sizeof(lane_gate.filtered) <= sizeof(trace_event_set_t::__bits));
    for (size_t i = 0; i < std::size(lane_gate.filtered); ++i)
        lane_gate.filtered[i].store(uint64_t(filtered.__bits[i]), std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst); // before the caller's stamp
}

void LaneSource::join_merge(RingMerger &merger, uint64_t now_ns)
{
    // A lane not listed at the previous reading was published after it, so
    // after the clock read before it: its records are stamped later.
    Lane *head = lanes_listed_after_clock(control_);
    for (Lane *lane = head; lane != adopted_head_; lane = lane->next)
        merger.add_ring(std::make_unique<LaneView>(*lane, control_), listed_after_ns_);
    adopted_head_ = head;
    listed_after_ns_ = now_ns;
}

RingMerger::GivenUp LaneSource::look_after(RingMerger &merger, uint64_t now_ns)
{
    if (now_ns - reclaimed_ns_ >=
        kReclaimPeriodNs * std::max<uint64_t>(1, owned_ / kLanesCheckedEachPeriod)) {
        owned_ = reclaim_lanes_of_exited_threads();
        reclaimed_ns_ = now_ns;
    }
    if (now_ns - stalls_checked_ns_ < kReclaimPeriodNs)
        return {};
    stalls_checked_ns_ = now_ns;
    return merger.pass_abandoned_records();
}

SourceLosses LaneSource::losses()
{
    return {lost(), 0, refused_while_full(), overwritten()};
}

size_t LaneSource::reclaim_lanes_of_exited_threads()
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
    // thread that takes a lane later adds its own: lane_of()).
    control_.chunks.allow(uint32_t(budget_chunks_ + owned));
    return owned;
}

uint64_t LaneSource::lost() const
{
    return control_.no_lane.load(std::memory_order_relaxed) +
           control_.lost_records.load(std::memory_order_relaxed) - lost_before_;
}

uint64_t LaneSource::overwritten() const
{
    return control_.chunk_rules.counted.load(std::memory_order_relaxed) - overwritten_before_;
}

uint64_t LaneSource::refused_while_full() const
{
    return control_.refused_full.load(std::memory_order_relaxed) - refused_before_;
}

} // namespace posixtrace
