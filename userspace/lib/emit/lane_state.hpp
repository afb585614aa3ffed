#pragma once
// What the emit path (lanes.cpp) and the stream's side of the lanes
// (sources/lanes/lane_source.cpp) share: the process's control page, a
// thread's record of its calls, and how one is looked at safely.
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "emit/lanes.hpp"
#include "sources/lanes/chunk_pool.hpp"

namespace posixtrace {

constexpr size_t kLaneChunkBytes = 64 * 1024; // the largest record fits in one
constexpr uint32_t kLaneChunksAtMost = 65536; // 4 GiB of address space
// A lane's own most: 512 MiB in flight.
constexpr uint32_t kChunksOfOneLane = 8192;
static_assert(kLaneChunkBytes >= PT_DATA_SIZE_LIMIT + sizeof(pt_record) + 8);

// In a page of its own that a child of fork sees zeroed (MADV_WIPEONFORK):
// the lanes are the parent's, and so is the stream. The stream's filter is
// the gate's (LaneGate): a child passes it, then stops at `attached`.
struct LaneControl {
    std::atomic<uint32_t> attached{0};
    std::atomic<uint32_t> state{PT_STREAM_SUSPENDED};
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
    // What every lane does as it fills a chunk: under POSIX_TRACE_LOOP take
    // back its oldest chunk the merge has not claimed (the records it took
    // back counted), and wake the drain if it dozes (through an eventfd of
    // the process, never closed). Zero in a child of fork: no wakes.
    LocalRing::ChunkRules chunk_rules;
    // The lanes' memory: what the attached stream allows, and a chunk for
    // each lane (an idle thread's lane holds one).
    ChunkPool chunks{kLaneChunkBytes, kLaneChunksAtMost};
};

constexpr unsigned kNestingLevels = 4; // a thread, and signal handlers within
constexpr size_t kPageBytes = 4096;
static_assert(sizeof(LaneControl) <= kPageBytes);

// The process's control, once mapped; attaches and detaches take the mutex.
extern std::atomic<LaneControl *> control_page;
extern std::mutex attach_mutex;

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
// The loads after a clock read are not done before it (rdtsc does not wait
// for them; lfence does).
inline void after_clock_read()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_lfence();
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// Reads `bytes` at `address` in process `pid` (this one), without faulting
// where nothing is mapped there (a frame on a signal stack since unmapped,
// the state of a thread that is gone): 0 when all of them were read, else
// why not. A short read stopped at a page that is not mapped: EFAULT, which
// errno does not say then.
int read_error(pid_t pid, const void *address, void *into, size_t bytes);
// read_error(), as whether all of them were read.
bool read_safely(pid_t pid, const void *address, void *into, size_t bytes);
// Whether the call whose frame is at `frame` still runs: the frame still
// holds the call's token.
bool token_in_place(pid_t pid, const volatile uint64_t *frame, uint64_t token);

} // namespace posixtrace
