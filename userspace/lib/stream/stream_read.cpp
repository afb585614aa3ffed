// Stream: reading events (the getnext functions).
#include "stream/stream.hpp"

#include <poll.h>

#include <cerrno>

#include "stream/stream_internal.hpp"
#include "util/event_fd.hpp"

namespace posixtrace {
using namespace stream_detail;

// ---- reading ---------------------------------------------------------------

bool Stream::available_locked() const
{
    return shut_down() || (store_ && (store_->report_due() || !store_->empty()));
}

// readable_ is a level: non-zero exactly while available_locked().
void Stream::update_readable_locked()
{
    bool available = available_locked();
    if (available == readable_signaled_)
        return;
    if (available)
        raise_event_fd(readable_.get());
    else
        lower_event_fd(readable_.get());
    readable_signaled_ = available;
}

// POSIX_TRACE_LOOP's report of what it overwrote, due before the oldest
// event left: the overflow event, then the resume event (each unless
// filtered). False when none is due.
bool Stream::take_loss_report_locked(pt_record &record, posix_trace_overflow_data &loss)
{
    if (std::optional<LossReport> overwritten = store_->take_overwritten_report()) {
        loss = {overwritten->in_kernel + overwritten->in_stream, overwritten->in_kernel,
                overwritten->in_stream};
        record = system_record(POSIX_TRACE_OVERFLOW, overwritten->timestamp_ns, sizeof loss);
        if (!filtered_locked(POSIX_TRACE_OVERFLOW)) {
            ledger_.count_recorded();
            return true;
        }
    }
    if (std::optional<uint64_t> at = store_->take_resume_stamp()) {
        record = system_record(POSIX_TRACE_RESUME, *at, 0);
        if (!filtered_locked(POSIX_TRACE_RESUME)) {
            ledger_.count_recorded();
            return true;
        }
    }
    return false;
}

int Stream::read_locked(const EventDestination &to)
{
    pt_record report;
    posix_trace_overflow_data loss;
    if (take_loss_report_locked(report, loss)) {
        copy_event_out(report, &loss, to); // a resume event's data_len is 0
        return 0;
    }
    if (store_->empty())
        return EAGAIN;
    const pt_record &record = store_->front();
    copy_event_out(record, record.data, to);
    store_->pop();
    if (store_->empty() && phase_ == StreamPhase::StoppedFull)
        auto_restart_locked();
    else
        full_policy_->after_read(*store_);
    return 0;
}

int Stream::next_event(const EventDestination &to, int *unavailable, WaitMode mode,
                       const timespec *abstime)
{
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (shut_down())
                return EINVAL;
            if (log_)
                log_->read_with_getnext();
            int err = read_locked(to);
            update_readable_locked();
            if (err == 0) {
                *unavailable = 0;
                return 0;
            }
        }
        if (mode == WaitMode::Try) {
            *unavailable = 1;
            return 0;
        }
        timespec timeout{};
        timespec *wait_for = nullptr;
        if (mode == WaitMode::Until) {
            if (!valid_abstime(abstime))
                return EINVAL;
            uint64_t now = clock_nanos(CLOCK_REALTIME), deadline = to_nanos(*abstime);
            if (now >= deadline) {
                *unavailable = 1;
                return ETIMEDOUT;
            }
            timeout = to_timespec(deadline - now);
            wait_for = &timeout;
        }
        pollfd readable{readable_.get(), POLLIN, 0};
        if (ppoll(&readable, 1, wait_for, nullptr) < 0 && errno == EINTR) {
            *unavailable = 1;
            return EINTR;
        }
    }
}

} // namespace posixtrace
