#include "sources/kernel/loss_notices.hpp"

#include <algorithm>
#include <cstring>

namespace posixtrace {

LossNotices::LossNotices(int notices_fd, int cpus) : cpus_(size_t(std::max(cpus, 0)))
{
    if (notices_fd >= 0)
        reader_.reset(ring_buffer__new(notices_fd, &LossNotices::on_notice, this, nullptr));
    // A kernel side kept from an earlier stream may have left notices:
    // that stream's, about counts zeroed since.
    if (reader_) {
        ring_buffer__consume(reader_.get());
        for (Cpu &cpu : cpus_)
            cpu.waiting.clear();
    }
}

int LossNotices::on_notice(void *self, void *data, size_t size)
{
    pt_loss_notice notice;
    if (size < sizeof notice)
        return 0;
    std::memcpy(&notice, data, sizeof notice);
    static_cast<LossNotices *>(self)->take_notice(notice);
    return 0;
}

// Notices wait only for a count read just before them; more than a ring
// holds can only be stale, and the oldest go (their losses are then placed
// at an earlier run's start).
void LossNotices::take_notice(const pt_loss_notice &notice)
{
    constexpr size_t kMostWaiting = PT_LOSS_NOTICE_RING_BYTES / sizeof(pt_loss_notice);
    if (notice.cpu >= cpus_.size())
        return;
    std::vector<pt_loss_notice> &waiting = cpus_[notice.cpu].waiting;
    if (waiting.size() >= kMostWaiting)
        waiting.erase(waiting.begin());
    waiting.push_back(notice);
}

// Every loss a count includes had its run's notice written before it was
// counted: read after the counts, the notices cover them all.
void LossNotices::place(const std::vector<uint64_t> &ring_full, std::vector<PlacedLoss> &out)
{
    if (reader_)
        ring_buffer__consume(reader_.get());
    for (size_t cpu = 0; cpu < cpus_.size() && cpu < ring_full.size(); ++cpu)
        place_cpu(cpus_[cpu], ring_full[cpu], out);
}

// A notice's stamp was read before the count it carries, so every loss
// counted from there on came after it: a loss comes after the latest stamp
// of the notices at or before it. Programs that interrupt each other on one
// CPU may write notices out of order: sorted by count first.
void LossNotices::place_cpu(Cpu &cpu, uint64_t ring_full, std::vector<PlacedLoss> &out)
{
    std::stable_sort(cpu.waiting.begin(), cpu.waiting.end(),
                     [](const pt_loss_notice &a, const pt_loss_notice &b) {
                         return a.lost_before < b.lost_before;
                     });
    auto emit = [&](uint64_t to) {
        if (to > cpu.placed_up_to)
            out.push_back({cpu.after_ns, to - cpu.placed_up_to});
        cpu.placed_up_to = std::max(cpu.placed_up_to, to);
    };
    size_t used = 0;
    for (; used < cpu.waiting.size() && cpu.waiting[used].lost_before < ring_full; ++used) {
        const pt_loss_notice &notice = cpu.waiting[used];
        emit(notice.lost_before);
        cpu.after_ns = std::max<uint64_t>(cpu.after_ns, notice.timestamp_ns);
    }
    cpu.waiting.erase(cpu.waiting.begin(), cpu.waiting.begin() + ptrdiff_t(used));
    emit(ring_full);
}

} // namespace posixtrace
