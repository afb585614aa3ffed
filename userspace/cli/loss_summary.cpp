#include "loss_summary.hpp"

#include <posix_trace/usdt.h>

#include <cstring>

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

std::vector<std::string> describe_left_out(trace_id_t trid)
{
    std::vector<std::string> sentences;
    size_t objects = 0;
    int first_error = 0;
    if (posix_trace_usdt_unattached(trid, &objects, &first_error) == 0 && objects)
        sentences.push_back("the probes of " + std::to_string(objects) +
                            " objects loaded while recording could not all be attached (" +
                            std::strerror(first_error) + "): their events were not recorded");
    uint64_t children = 0;
    if (posix_trace_get_untraced_children(trid, &children) == 0 && children)
        sentences.push_back(
            std::to_string(children) + " child processes were not traced: each was forked while " +
            std::to_string(POSIX_TRACE_MAX_TRACED_PROCESSES) + " traced processes were alive");
    return sentences;
}

} // namespace posixtrace::cli
