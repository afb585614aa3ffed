// Stream: the filter, attributes, status and counters, and the event types.
#include "stream/stream.hpp"

#include <cerrno>

#include <posix_trace/usdt.h>

namespace posixtrace {

int Stream::set_filter(const trace_event_set_t &set, int how)
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    return controls_.set_filter(set, how);
}

trace_event_set_t Stream::filter() const
{
    std::lock_guard lock(mutex_);
    return parts_.filters.current();
}

Attributes Stream::attributes() const
{
    return attributes_;
}

posix_trace_status_info Stream::report_status()
{
    std::lock_guard lock(mutex_);
    posix_trace_status_info status{};
    status.posix_stream_status = running() ? POSIX_TRACE_RUNNING : POSIX_TRACE_SUSPENDED;
    // A caller holding the stream may ask after a shutdown freed the store.
    bool full = parts_.store && parts_.store->full();
    status.posix_stream_full_status = full ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    status.posix_stream_overrun_status =
        parts_.ledger.take_overrun() ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    status.posix_log_full_status = POSIX_TRACE_NOT_FULL;
    status.posix_log_overrun_status = POSIX_TRACE_NO_OVERRUN;
    status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    status.posix_stream_flush_error = 0;
    if (parts_.log)
        parts_.log->report_status(status);
    return status;
}

// The counters count, as lost, the events the log writer failed to write
// until now.
void Stream::account_log_failure_locked()
{
    if (parts_.log)
        parts_.log->account_failure();
}

posix_trace_counters Stream::counters()
{
    std::lock_guard lock(mutex_);
    account_log_failure_locked();
    return parts_.ledger.counters();
}

posix_trace_loss_counters Stream::loss_counters()
{
    std::lock_guard lock(mutex_);
    account_log_failure_locked();
    return parts_.ledger.losses();
}

uint64_t Stream::unwritten_events()
{
    std::lock_guard lock(mutex_);
    account_log_failure_locked();
    return parts_.ledger.unwritten();
}

std::vector<KernelProgram::ProgramMisses> Stream::skipped_runs() const
{
    std::lock_guard lock(mutex_);
    if (!parts_.recording.has_kernel())
        return {};
    return parts_.recording.kernel().recursion_misses();
}

uint64_t Stream::untraced_children() const
{
    std::lock_guard lock(mutex_);
    return parts_.recording.has_kernel() ? parts_.recording.kernel().untraced_children() : 0;
}

// ---- event types -----------------------------------------------------------

int Stream::attach_usdt(const std::string &spec, size_t &attached)
{
    std::lock_guard lock(mutex_);
    if (shut_down())
        return EINVAL;
    return parts_.recording.probes()->add_usdt_spec(target_pid_, spec, attached);
}

ProbeAttacher::Unattached Stream::unattached_probes()
{
    std::lock_guard lock(mutex_);
    return parts_.recording.probes() ? parts_.recording.probes()->unattached()
                                     : ProbeAttacher::Unattached{};
}

static_assert(PT_USDT_STRING_MAX == POSIX_TRACE_USDT_STRING_MAX);
static_assert(PT_USDT_MAX_SITES == POSIX_TRACE_USDT_MAX_SITES);
static_assert(PT_MAX_TRACED_PROCESSES == POSIX_TRACE_MAX_TRACED_PROCESSES);

int Stream::decode_usdt_string(const std::string &probe, unsigned index)
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

bool Stream::control_thread_events(const std::function<void(KernelProgram &)> &change)
{
    std::lock_guard lock(mutex_);
    if (shut_down())
        return false;
    change(parts_.recording.kernel());
    return true;
}

int Stream::set_thread_agent(pid_t pid, bool present)
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

std::optional<std::string> Stream::event_name(trace_event_id_t id) const
{
    std::lock_guard lock(mutex_);
    return parts_.event_types->name_of(id);
}

int Stream::open_event_type(const char *name, trace_event_id_t &id)
{
    std::lock_guard lock(mutex_);
    return parts_.event_types->open(name, id);
}

void Stream::next_event_type(trace_event_id_t &id, int &unavailable)
{
    std::lock_guard lock(mutex_);
    parts_.event_types->next(id, unavailable);
}

void Stream::rewind_event_types()
{
    std::lock_guard lock(mutex_);
    parts_.event_types->rewind();
}

} // namespace posixtrace
