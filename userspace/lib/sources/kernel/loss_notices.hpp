#pragma once
#include <bpf/libbpf.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "posixtrace.h"
#include "sources/record_source.hpp"

namespace posixtrace {

// Places the losses of the kernel's rings in time. Each CPU counts the
// records that found its ring full; the first of each run of them also
// writes a notice (struct pt_loss_notice) saying when the run began and
// how many that CPU had lost before. Given the counts read just now, this
// tells, for the losses counted since the previous call, the latest time
// each is known to come after: its run's beginning, or an earlier run's
// when a notice found no room (never later than the loss).
class LossNotices {
public:
    LossNotices(int notices_fd, int cpus);
    bool ready() const { return reader_ != nullptr; }

    // `ring_full[cpu]`: each CPU's count, read before this call; they only
    // grow. Appends to `out` one entry a run (or part of one) counted since
    // the previous call; their counts add up to the growth of the counts.
    void place(const std::vector<uint64_t> &ring_full, std::vector<PlacedLoss> &out);

    // Notices read so far, as place() does before it uses them (for a test
    // that writes them itself).
    void take_notice(const pt_loss_notice &notice);

private:
    struct RingBufferDeleter {
        void operator()(ring_buffer *ring) const { ring_buffer__free(ring); }
    };
    struct Cpu {
        uint64_t placed_up_to = 0;           // the losses before this count are placed
        uint64_t after_ns = 0;               // the latest start known of the run now going on
        std::vector<pt_loss_notice> waiting; // notices of losses not counted yet
    };

    static int on_notice(void *self, void *data, size_t size);
    void place_cpu(Cpu &cpu, uint64_t ring_full, std::vector<PlacedLoss> &out);

    std::unique_ptr<ring_buffer, RingBufferDeleter> reader_;
    std::vector<Cpu> cpus_;
};

} // namespace posixtrace
