#include "loss_summary.hpp"

namespace posixtrace::cli {

std::string describe_losses(uint64_t lost, trace_id_t trid)
{
    std::string text = std::to_string(lost) + " lost";
    posix_trace_loss_counters losses{};
    if (posix_trace_get_loss_counters(trid, &losses) != 0)
        return text;
    std::string causes;
    auto add = [&](uint64_t count, const char *what) {
        if (count)
            causes += (causes.empty() ? "" : ", ") + std::to_string(count) + what;
    };
    add(losses.switches_unreported, " switches not reported by the kernel");
    add(losses.runs_skipped, " program runs skipped by the kernel");
    return causes.empty() ? text : text + " (" + causes + ")";
}

} // namespace posixtrace::cli
