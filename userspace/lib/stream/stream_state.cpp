// Stream: the filter, attributes, status and counters, and the event types.
#include "stream/stream.hpp"

#include <cerrno>

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
    return controls_.status();
}

// The counters count, as lost, the events the log writer failed to write
// until now.
void Stream::account_log_failure_locked()
{
    if (parts_.log)
        parts_.log->account_failure();
}

std::optional<posix_trace_counters> Stream::counters()
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

// ---- event types -----------------------------------------------------------

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
