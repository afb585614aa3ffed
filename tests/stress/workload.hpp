// The traced side of the stress harness: emitter threads numbering their
// events, a thread sending them signals (whose handlers emit too), a thread
// forking children, a thread creating short-lived threads, and one untraced
// CPU hog per CPU so that preemption is frequent.
#pragma once
#include <sys/types.h>
#include <trace.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace stress {

constexpr int kMaxEmitters = 16;

// The payload of every user event: which emitter, which sequence (its main
// loop or its signal handler), and the number in that sequence.
struct Payload {
    uint32_t emitter;
    uint32_t kind; // Kind
    uint64_t seq;
};
enum Kind : uint32_t { kMain = 0, kHandler = 1 };

struct WorkloadOptions {
    int emitters = 6;
    bool signals = true;
    bool forks = true;
    bool churn = true;
    bool usdt = true;          // emitters also fire stress:tick(emitter, seq)
    unsigned pause_every = 16; // a 20 us nanosleep every this many events
};

// What the workload did, for the checker's final accounting.
struct WorkloadCounts {
    int emitters = 0;
    pid_t pid = 0;
    pid_t tids[kMaxEmitters] = {};
    uint64_t emitted[kMaxEmitters] = {}; // main sequence (and USDT ticks)
    uint64_t handled[kMaxEmitters] = {}; // signal handler sequence
    uint64_t forks = 0;
    uint64_t threads_created = 0;
    // voluntary + involuntary context switches of each emitter while traced
    // (read from /proc while it was blocked, before and after)
    long switches[kMaxEmitters] = {};
};

class Workload {
public:
    explicit Workload(const WorkloadOptions &options, trace_event_id_t event_id);
    ~Workload();
    Workload(const Workload &) = delete;
    Workload &operator=(const Workload &) = delete;

    // Threads are created blocked; their switch counts are read.
    void prepare();
    // Lets them run.
    void go();
    // Ends the emission: every thread of the workload blocks, and stays
    // blocked until release() (the caller stops the stream meanwhile).
    void finish();
    // Reads the switch counts again, lets the threads end, joins them.
    WorkloadCounts release();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Forks one busy-looping process per CPU (untraced: a self-traced stream does
// not inherit them). Killed and reaped by the destructor.
class CpuHogs {
public:
    CpuHogs();
    ~CpuHogs();
    CpuHogs(const CpuHogs &) = delete;
    CpuHogs &operator=(const CpuHogs &) = delete;

private:
    std::vector<pid_t> pids_;
};

long context_switches(pid_t pid, pid_t tid);

} // namespace stress
