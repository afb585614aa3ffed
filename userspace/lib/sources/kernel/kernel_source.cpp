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
    }
}

std::vector<int> KernelSource::readable_fds() const
{
    std::vector<int> fds;
    for (int cpu = 0; cpu < program_.cpu_count(); ++cpu)
        fds.push_back(program_.ring_fd(cpu));
    return fds;
}

SourceLosses KernelSource::losses() const
{
    KernelProgram::Losses counted = program_.losses();
    return {counted.ring_full, counted.unreported_switches, program_.refused_while_full()};
}

} // namespace posixtrace
