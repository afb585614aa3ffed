#include "store/loss_placement.hpp"

#include <algorithm>

namespace posixtrace {

uint64_t LossPlacement::report_time(uint64_t looked_ns) const
{
    return std::max(
        {looked_ns > margin_ns_ ? looked_ns - margin_ns_ : 0, delivered_ns_, started_ns_});
}

namespace {

// One report a distinct start, at most `most`: beyond that, neighbours in
// time share one, at the earlier start.
std::vector<PlacedLoss> fold_placed(std::vector<PlacedLoss> placed, size_t most)
{
    std::sort(placed.begin(), placed.end(),
              [](const PlacedLoss &a, const PlacedLoss &b) { return a.after_ns < b.after_ns; });
    std::vector<PlacedLoss> folded;
    for (size_t i = 0; i < placed.size(); ++i) {
        size_t bucket = i * most / placed.size();
        bool joins = !folded.empty() && (folded.back().after_ns == placed[i].after_ns ||
                                         (i - 1) * most / placed.size() == bucket);
        if (joins)
            folded.back().count += placed[i].count;
        else
            folded.push_back(placed[i]);
    }
    return folded;
}

} // namespace

std::vector<LossWindow> LossPlacement::kernel_windows(uint64_t unplaced,
                                                      const std::vector<PlacedLoss> &placed,
                                                      uint64_t placed_total, uint64_t looked_ns,
                                                      uint64_t counts_read_ns,
                                                      uint64_t ended_ns) const
{
    std::vector<LossWindow> windows;
    auto add = [&](uint64_t count, uint64_t from_ns) {
        windows.push_back({{count, 0, 0}, from_ns, std::max(from_ns, ended_ns)});
    };
    if (unplaced)
        add(unplaced, report_time(looked_ns));
    uint64_t unreported = placed_total;
    for (const PlacedLoss &loss : fold_placed(placed, kMostPlacedReports)) {
        uint64_t count = std::min(loss.count, unreported);
        unreported -= count;
        if (count)
            add(count, std::max(loss.after_ns, report_time(counts_read_ns)));
    }
    return windows;
}

} // namespace posixtrace
