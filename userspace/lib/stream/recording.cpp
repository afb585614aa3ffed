#include "stream/recording.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cerrno>

#include "sources/kernel/kernel_parking.hpp"
#include "sources/kernel/kernel_source.hpp"
#include "sources/lanes/lane_source.hpp"
#include "util/clock.hpp"
#include "util/event_fd.hpp"

namespace posixtrace {

int Recording::open(const Plan &plan, uint64_t rings_created_after_ns)
{
    reused_ = take_parked_kernel_side(plan);
    if (!reused_)
        if (int err = KernelProgram::load(plan.config, kernel_))
            return err;
    kernel_->set_inherit_children(plan.inherit);
    if (int err = kernel_->trace_process(plan.target))
        return err;
    if (!probes_) {
        probes_ = std::make_unique<ProbeAttacher>(*kernel_, plan.inherit);
        // The process's user events come through the lanes or through the
        // probe, never both, never neither.
        if (plan.lanes_wanted && probes_->leave_user_events_of(plan.target, plan.binary))
            if (!attach_lanes(plan))
                probes_->attach_user_events_everywhere(); // another stream holds the lanes
    }
    if (int err = probes_->refresh(plan.target))
        return err;
    // The lanes joined the merge as they were attached; the kernel's rings
    // join now.
    auto kernel_source = std::make_unique<KernelSource>(*kernel_);
    if (!kernel_source->ready())
        return ENOMEM;
    kernel_source->join_merge(merger_, rings_created_after_ns);
    if (!merger_.ready())
        return ENOMEM;
    sources_.push_back(std::move(kernel_source));
    if (lanes_)
        sources_.push_back(std::move(lanes_));
    if (int err = watch_sources())
        return err;
    open_done_ = true;
    return 0;
}

// A kernel side parked by an earlier stream of this process, whatever
// process that one traced. Its probes (parked only when they are in one
// process alone, none asked for by the user) are kept by a stream of that
// process, still running, that takes its user events the same way: through
// the lanes, which must then be this stream's, or through the probe.
// Otherwise they are retired (the probe they lack would be needed, or the
// one they have would record each event twice), and the stream attaches
// its own.
bool Recording::take_parked_kernel_side(const Plan &plan)
{
    std::optional<KernelSide> parked = KernelParking::take(plan.config);
    if (!parked)
        return false;
    bool keep = parked->probes && parked->probes->reusable_for(plan.target) && !plan.inherit &&
                parked->probes->leaves_user_events() == plan.lanes_wanted;
    if (keep && plan.lanes_wanted)
        keep = parked->probes->leave_user_events_of(plan.target, plan.binary) && attach_lanes(plan);
    if (!keep)
        KernelParking::retire_probes(*parked);
    kernel_ = std::move(parked->program);
    probes_ = std::move(parked->probes);
    return true;
}

bool Recording::attach_lanes(const Plan &plan)
{
    lanes_ = LaneSource::attach(plan.lane_budget, plan.config.max_data_size, plan.loop_kept_bytes,
                                merger_, clock_nanos(CLOCK_MONOTONIC));
    has_lanes_ = lanes_ != nullptr;
    return has_lanes_;
}

int Recording::watch_sources()
{
    wakeup_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
    if (!wakeup_ || !epoll_)
        return errno;
    epoll_event wake{EPOLLIN, {}};
    wake.data.fd = wakeup_.get();
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wakeup_.get(), &wake);
    for (auto &source : sources_) {
        for (int fd : source->readable_fds()) {
            // Edge-triggered: a ring holding records younger than the
            // reorder window must not wake the drain again and again.
            epoll_event ring{EPOLLIN | EPOLLET, {}};
            ring.data.fd = fd;
            epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ring);
        }
    }
    return 0;
}

void Recording::set_state(pt_stream_state state)
{
    for (auto &source : sources_)
        source->set_state(state);
}

void Recording::set_filter(const trace_event_set_t &filtered)
{
    for (auto &source : sources_)
        source->set_filter(filtered);
}

SourceLosses Recording::losses()
{
    SourceLosses losses;
    for (const auto &source : sources_)
        losses += source->losses();
    return losses;
}

uint64_t Recording::refused_while_full() const
{
    uint64_t refused = 0;
    for (const auto &source : sources_)
        refused += source->refused_while_full();
    return refused;
}

void Recording::doze()
{
    for (auto &source : sources_)
        source->doze();
}

void Recording::look_after_sources(uint64_t now_ns,
                                   const std::function<void(const RingMerger::GivenUp &)> &given_up)
{
    for (auto &source : sources_) {
        source->join_merge(merger_, now_ns);
        given_up(source->look_after(merger_, now_ns));
    }
}

void Recording::wait(const std::optional<timespec> &timeout)
{
    epoll_event events[16];
    epoll_pwait2(epoll_.get(), events, 16, timeout ? &*timeout : nullptr, nullptr);
    lower_event_fd(wakeup_.get());
}

void Recording::wake()
{
    if (wakeup_)
        raise_event_fd(wakeup_.get());
}

// The eventfd that wakes the drain stays: a log's writer may still report
// its progress until the stream is gone.
void Recording::close(bool park)
{
    if (park && kernel_) // the rings empty for the next stream
        merger_.discard_all([](const pt_record &) {});
    merger_ = RingMerger();
    sources_.clear(); // the merge read them until now
    lanes_.reset();
    if (park && kernel_) {
        if (!open_done_)
            probes_.reset(); // what a set-up that failed half-way attached is retired
        KernelParking::park({std::move(kernel_), std::move(probes_)});
    }
    probes_.reset();
    kernel_.reset();
    epoll_.reset();
}

} // namespace posixtrace
