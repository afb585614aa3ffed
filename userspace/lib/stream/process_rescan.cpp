#include "stream/process_rescan.hpp"

#include <time.h>

#include <algorithm>
#include <set>

#include "util/clock.hpp"

namespace posixtrace {

void ProcessRescan::look(uint64_t now_ns, const KernelProgram &kernel, ProbeAttacher &probes)
{
    uint64_t lost = kernel.lifecycle_lost();
    uint64_t period = kPeriodNs * std::max<uint64_t>(1, processes_seen_ / kProcessesEachPeriod);
    if (lost == lost_seen_ || now_ns - looked_ns_ < period)
        return;
    looked_ns_ = now_ns;
    KernelProgram::RunningImages running = kernel.running_images();
    processes_seen_ = running.by_process.size();
    for (const auto &[pid, image] : running.by_process)
        probes.refresh(pid);
    user_events_.look_again_at_objects();
    if (!running.complete)
        return; // one not listed may still run: nothing forgotten, looked at again next period
    lost_seen_ = lost;
    std::set<uint32_t> images;
    for (const auto &[pid, image] : running.by_process)
        images.insert(image);
    for (pid_t pid : probes.processes())
        if (!running.by_process.count(pid))
            probes.forget(pid);
    // Everything an image not running at the look recorded is stamped
    // before the look ended. An earlier look's images still known are
    // among these.
    images_to_forget_ =
        ImagesToForget{clock_nanos(CLOCK_MONOTONIC), user_events_.images_not_in(images)};
}

void ProcessRescan::delivered_before(uint64_t safe_ns)
{
    if (images_to_forget_ && safe_ns > images_to_forget_->looked_ns) {
        user_events_.drop_images(images_to_forget_->images);
        images_to_forget_.reset();
    }
}

} // namespace posixtrace
