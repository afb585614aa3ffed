#include "stream/stream_probes.hpp"

#include <cerrno>
#include <mutex>

#include <posix_trace/usdt.h>

#include "stream/stream_controls.hpp"
#include "stream/stream_parts.hpp"

namespace posixtrace {

static_assert(PT_USDT_STRING_MAX == POSIX_TRACE_USDT_STRING_MAX);
static_assert(PT_USDT_MAX_SITES == POSIX_TRACE_USDT_MAX_SITES);
static_assert(PT_MAX_TRACED_PROCESSES == POSIX_TRACE_MAX_TRACED_PROCESSES);

bool StreamProbes::shut_down() const
{
    return controls_.shut_down();
}

int StreamProbes::attach_usdt(const std::string &spec, size_t &attached)
{
    std::lock_guard lock(mutex_);
    if (shut_down())
        return EINVAL;
    return parts_.recording.probes()->add_usdt_spec(target_, spec, attached);
}

ProbeAttacher::Unattached StreamProbes::unattached_probes()
{
    std::lock_guard lock(mutex_);
    return parts_.recording.probes() ? parts_.recording.probes()->unattached()
                                     : ProbeAttacher::Unattached{};
}

int StreamProbes::decode_usdt_string(const std::string &probe, unsigned index)
{
    std::lock_guard lock(mutex_);
    if (shut_down() || index >= PT_USDT_MAX_ARGS)
        return EINVAL;
    auto id = parts_.recording.probes()->usdt_id(probe);
    if (!id)
        return ENOENT;
    parts_.recording.kernel().set_usdt_string_argument(*id, index);
    return 0;
}

bool StreamProbes::control_thread_events(const std::function<void(KernelProgram &)> &change)
{
    std::lock_guard lock(mutex_);
    if (shut_down())
        return false;
    change(parts_.recording.kernel());
    return true;
}

int StreamProbes::set_thread_agent(pid_t pid, bool present)
{
    std::lock_guard lock(mutex_);
    parts_.pipeline->agents().set(pid, present);
    if (shut_down())
        return 0;
    int err = parts_.select_thread_event_programs();
    if (err && present) // an agent whose events cannot all be produced is refused
        parts_.pipeline->agents().set(pid, false);
    return err;
}

std::vector<KernelProgram::ProgramMisses> StreamProbes::skipped_runs() const
{
    std::lock_guard lock(mutex_);
    if (!parts_.recording.has_kernel())
        return {};
    return parts_.recording.kernel().recursion_misses();
}

uint64_t StreamProbes::untraced_children() const
{
    std::lock_guard lock(mutex_);
    return parts_.recording.has_kernel() ? parts_.recording.kernel().untraced_children() : 0;
}

} // namespace posixtrace
