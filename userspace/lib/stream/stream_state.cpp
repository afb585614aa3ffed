// Stream: the filter, attributes, status and counters, and the event types.
#include "stream/stream.hpp"

#include <algorithm>
#include <cerrno>

#include <posix_trace/usdt.h>

#include "events/event_set.hpp"
#include "util/clock.hpp"

namespace posixtrace {

int Stream::set_filter(const trace_event_set_t &set, int how)
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    trace_event_set_t updated = filters_.current();
    if (!change_event_set(updated, set, how))
        return EINVAL;
    posix_trace_filter_data change{filters_.current(), updated};
    // A thread event the new filter lets through needs its program attached
    // first: if the kernel refuses, the old filter stays and the caller is
    // told.
    filters_.set_current(updated);
    if (int err = select_thread_event_programs_locked()) {
        filters_.set_current(change.old_filter);
        select_thread_event_programs_locked();
        return err;
    }
    // In two steps around the filter event's stamp: what the new filter
    // excludes stops before it, what it admits starts after it. So no event
    // on either side of it contradicts it.
    recording_.set_filter(event_set_union(updated, change.old_filter));
    uint64_t now = monotonic_now();
    recording_.set_filter(updated);
    filters_.took_effect(change.old_filter, now);
    drain_->distrust_sleeps();
    if (running())
        drain_->queue_system_event(POSIX_TRACE_FILTER, now, &change, sizeof change);
    return 0;
}

trace_event_set_t Stream::filter() const
{
    std::lock_guard lock(mutex_);
    return filters_.current();
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
    bool full = store_ && store_->full();
    status.posix_stream_full_status = full ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    status.posix_stream_overrun_status =
        ledger_.take_overrun() ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    status.posix_log_full_status = POSIX_TRACE_NOT_FULL;
    status.posix_log_overrun_status = POSIX_TRACE_NO_OVERRUN;
    status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    status.posix_stream_flush_error = 0;
    if (log_)
        log_->report_status(status);
    return status;
}

// Both count, as lost, the events the log writer failed to write until now.
posix_trace_counters Stream::counters()
{
    std::lock_guard lock(mutex_);
    if (log_)
        log_->account_failure();
    return ledger_.counters();
}

posix_trace_loss_counters Stream::loss_counters()
{
    std::lock_guard lock(mutex_);
    if (log_)
        log_->account_failure();
    return ledger_.losses();
}

uint64_t Stream::unwritten_events()
{
    std::lock_guard lock(mutex_);
    if (log_)
        log_->account_failure();
    return ledger_.unwritten();
}

std::vector<KernelProgram::ProgramMisses> Stream::skipped_runs() const
{
    std::lock_guard lock(mutex_);
    if (!recording_.has_kernel())
        return {};
    return recording_.kernel().recursion_misses();
}

uint64_t Stream::untraced_children() const
{
    std::lock_guard lock(mutex_);
    return recording_.has_kernel() ? recording_.kernel().untraced_children() : 0;
}

// ---- event types -----------------------------------------------------------

int Stream::attach_usdt(const std::string &spec, size_t &attached)
{
    std::lock_guard lock(mutex_);
    if (shut_down())
        return EINVAL;
    return probes()->add_usdt_spec(target_pid_, spec, attached);
}

ProbeAttacher::Unattached Stream::unattached_probes()
{
    std::lock_guard lock(mutex_);
    return probes() ? probes()->unattached() : ProbeAttacher::Unattached{};
}

static_assert(PT_USDT_STRING_MAX == POSIX_TRACE_USDT_STRING_MAX);
static_assert(PT_USDT_MAX_SITES == POSIX_TRACE_USDT_MAX_SITES);
static_assert(PT_MAX_TRACED_PROCESSES == POSIX_TRACE_MAX_TRACED_PROCESSES);

int Stream::decode_usdt_string(const std::string &probe, unsigned index)
{
    std::lock_guard lock(mutex_);
    if (shut_down() || index >= PT_USDT_MAX_ARGS)
        return EINVAL;
    auto id = probes()->usdt_id(probe);
    if (!id)
        return ENOENT;
    kernel().set_usdt_string_argument(*id, index);
    return 0;
}

bool Stream::control_thread_events(const std::function<void(KernelProgram &)> &change)
{
    std::lock_guard lock(mutex_);
    if (shut_down())
        return false;
    change(kernel());
    return true;
}

int Stream::set_thread_agent(pid_t pid, bool present)
{
    std::lock_guard lock(mutex_);
    pipeline_->agents().set(pid, present);
    if (shut_down())
        return 0;
    int err = select_thread_event_programs_locked();
    if (err && present) // an agent whose events cannot all be produced is refused
        pipeline_->agents().set(pid, false);
    return err;
}

// The thread event types the stream may record: those its filter lets
// through, and all of them while an agent may ask for any.
int Stream::select_thread_event_programs_locked()
{
    uint32_t wanted = 0;
    for (unsigned i = 0; i < POSIX_TRACE_TD_EVENT_COUNT; ++i)
        if (!pipeline_->agents().empty() || !filters_.filters(POSIX_TRACE_TD_EVENT_FIRST + i))
            wanted |= 1u << i;
    return kernel().select_thread_event_programs(wanted);
}

std::optional<std::string> Stream::event_name(trace_event_id_t id) const
{
    std::lock_guard lock(mutex_);
    return event_types_->name_of(id);
}

int Stream::open_event_type(const char *name, trace_event_id_t &id)
{
    std::lock_guard lock(mutex_);
    return event_types_->open(name, id);
}

void Stream::next_event_type(trace_event_id_t &id, int &unavailable)
{
    std::lock_guard lock(mutex_);
    event_types_->next(id, unavailable);
}

void Stream::rewind_event_types()
{
    std::lock_guard lock(mutex_);
    event_types_->rewind();
}

} // namespace posixtrace
