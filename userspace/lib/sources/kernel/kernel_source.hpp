#pragma once
#include <atomic>

#include "kernel/kernel_program.hpp"
#include "sources/kernel/loop_ring_mirror.hpp"
#include "sources/kernel/loss_notices.hpp"
#include "sources/record_source.hpp"

namespace posixtrace {

// The records the kernel programs write: one BPF ring buffer a CPU, read in
// place, and for a POSIX_TRACE_LOOP stream one loop ring a CPU too, read
// from a copy (LoopRingMirror). The program itself stays the stream's (it also follows processes
// and steers the thread events); this is what the merge needs of it.
class KernelSource final : public RecordSource {
public:
    explicit KernelSource(KernelProgram &program)
        : program_(program), notices_(program.loss_notices_fd(), program.cpu_count()),
          ring_full_(size_t(program.cpu_count()))
    {
    }
    bool ready() const { return notices_.ready(); }

    void set_state(pt_stream_state state) override { program_.set_state(state); }
    void set_filter(const trace_event_set_t &filtered) override { program_.set_filter(filtered); }
    // The rings join once: the kernel makes no new ones.
    void join_merge(RingMerger &merger, uint64_t now_ns) override;
    std::vector<int> readable_fds() const override;
    SourceLosses losses() override;
    uint64_t refused_while_full() const override { return program_.refused_while_full(); }

private:
    KernelProgram &program_;
    LossNotices notices_;
    std::vector<uint64_t> ring_full_; // each CPU's, as last read
    // What the programs overwrote in the loop rings before it was read
    // (LoopRingMirror), under POSIX_TRACE_LOOP.
    std::atomic<uint64_t> overwritten_{0};
    std::vector<LoopRingMirror *> mirrors_; // the merge's, while it has them
    bool joined_ = false;
};

} // namespace posixtrace
