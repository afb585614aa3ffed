#include "sources/kernel/kernel_source.hpp"

#include <memory>

#include "sources/kernel/ring_reader.hpp"

namespace posixtrace {

void KernelSource::join_merge(RingMerger &merger, uint64_t now_ns)
{
    if (joined_)
        return;
    joined_ = true;
    for (int cpu = 0; cpu < program_.cpu_count(); ++cpu) {
        merger.add_ring(std::make_unique<RingReader>(program_.ring_fd(cpu), program_.ring_bytes()),
                        now_ns);
        if (!merger.ready()) // a ring that could not be mapped: the stream fails
            return;
        const uint8_t *loop = program_.loop_ring(cpu);
        if (!loop)
            continue;
        auto mirror = std::make_unique<LoopRingMirror>(loop, program_.loop_ring_bytes(),
                                                       program_.loop_tag_key(), overwritten_);
        mirrors_.push_back(mirror.get());
        merger.add_ring(std::move(mirror), now_ns);
        if (!merger.ready()) // no memory for its copy
            return;
    }
}

std::vector<int> KernelSource::readable_fds() const
{
    std::vector<int> fds;
    for (int cpu = 0; cpu < program_.cpu_count(); ++cpu)
        fds.push_back(program_.ring_fd(cpu));
    return fds;
}

// The counts first, then the notices: those of every loss counted are in.
// The loop rings are copied first: what their programs overwrote is counted
// as the copy finds it, and a flush reports it with what was read before.
SourceLosses KernelSource::losses()
{
    for (LoopRingMirror *mirror : mirrors_)
        mirror->refresh();
    SourceLosses losses;
    for (int cpu = 0; cpu < program_.cpu_count(); ++cpu) {
        ring_full_[size_t(cpu)] = program_.ring_full_on(cpu);
        losses.ring_full += ring_full_[size_t(cpu)];
    }
    losses.unreported_switches = program_.unreported_switches();
    losses.refused_while_full = program_.refused_while_full();
    losses.overwritten = overwritten_.load(std::memory_order_relaxed);
    for (LoopRingMirror *mirror : mirrors_)
        mirror->count_read();
    notices_.place(ring_full_, losses.placed);
    return losses;
}

} // namespace posixtrace
