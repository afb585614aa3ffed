// Stream: the trace log it flushes to.
#include "stream/stream.hpp"

#include <unistd.h>

#include <posix_trace/events.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "stream/stream_internal.hpp"

namespace posixtrace {
using namespace stream_detail;

// ---- the trace log -------------------------------------------------------------

int Stream::flush()
{
    std::unique_lock lock(mutex_);
    if (shut_down() || !log_)
        return EINVAL;
    if (int err = log_->first_error())
        return err;
    uint64_t now = monotonic_now();
    flush_locked(lock, now); // what the kernel recorded until now is in the stream
    if (shut_down())
        return EINVAL;
    if (!move_to_log_locked()) { // the log failed meanwhile: no flush started
        update_readable_locked();
        return log_->first_error();
    }
    // After what the flush took (it may hold events stamped after `now`).
    note_flush_start_locked(std::max<uint64_t>(now, merger_.last_delivered_ns()));
    if (phase_ == StreamPhase::StoppedFull)
        auto_restart_locked(); // an UNTIL_FULL stream emptied by the flush runs again
    update_readable_locked();
    return 0;
}

// A log left by an exec has no trailer: a reader takes it as a log whose
// writer stopped after its last block, and reads every event.
void Stream::flush_log_before_exec()
{
    std::unique_lock lock(mutex_);
    if (shut_down() || !log_ || log_->first_error())
        return;
    flush_locked(lock, monotonic_now());
    if (shut_down())
        return;
    move_to_log_locked();
    wait_for_flushes_locked(lock);
}

// Until the log writer has written every block handed to it; the lock is let
// go meanwhile (the writer does not take it, a shutdown may).
void Stream::wait_for_flushes_locked(std::unique_lock<TrackedMutex> &lock)
{
    while (!shut_down() && !flushes_.empty() && !log_->done(flushes_.back())) {
        lock.unlock();
        usleep(100);
        lock.lock();
    }
}

// Hands every event of the stream, losses reported first, to the log
// writer; false, and nothing handed, once the log's writes have failed.
bool Stream::move_to_log_locked()
{
    account_log_failure_locked();
    if (log_->first_error()) {
        drop_for_failed_log_locked();
        return false;
    }
    auto name_of = [this](uint32_t id) { return event_name_locked(id); };
    // Every event the stream hands over later is stamped no earlier than
    // what was delivered, nor than the merge's safe point: a record is
    // delivered past it, a run was not read when it passed, a system event
    // is queued there at the earliest.
    uint64_t later_ns =
        uint64_t(int64_t(std::max(merger_.last_delivered_ns(), safe_ns_)) + realtime_offset_ns_);
    pt_record report;
    posix_trace_overflow_data loss;
    auto append = [&](const pt_record &record, const void *data) {
        if (runs_)
            runs_->hand_over_before(record.timestamp_ns, later_ns);
        if (log_->append(record, data, name_of) == log::LogWriter::Appended::filled_it)
            close_full_log_locked(record.timestamp_ns);
    };
    while (take_loss_report_locked(report, loss))
        append(report, &loss);
    while (!store_->empty()) {
        const pt_record &record = store_->front();
        append(record, record.data);
        store_->pop();
    }
    if (runs_)
        runs_->hand_over_before(UINT64_MAX, later_ns);
    store_->forget_beside();
    full_policy_->after_flush(*store_);
    flushes_.push_back(log_->submit(later_ns));
    return true;
}

// A whole chunk of a lane as a run of the log, held until the stream
// flushes, in the stream's room: a stream it fills flushes first.
std::optional<uint64_t> Stream::take_chunk_locked(const RingMerger::Chunk &chunk)
{
    if (log_->first_error() || read_with_getnext_)
        return std::nullopt; // the stream keeps them, to be read or as it keeps every event now
    LaneRuns::Judge judge{
        [this](uint64_t ns) { return pipeline_->cut_offs().of(ns) == CutOffs::Verdict::Keep; },
        [this](const pt_record &record) {
            return classify(record) == RecordKind::UserEvent &&
                   pipeline_->user_ids().keeps_id(record);
        },
        [this](uint32_t id) { return event_name_locked(id); }};
    // The chunk's bytes bound what its run takes, names aside.
    size_t bytes = size_t(chunk.to - chunk.from);
    if (!store_->fits_beside(bytes) ||
        runs_->bytes_held() + bytes > LaneRuns::kHeldBytesBeforeFlush) {
        if (move_to_log_locked())
            note_flush_start_locked(merger_.last_delivered_ns());
        if (!store_->fits_beside(bytes))
            return std::nullopt; // a chunk larger than the stream: the merge takes it as it can
    }
    std::optional<LaneRuns::Taken> taken = runs_->take(chunk, judge);
    if (!taken)
        return std::nullopt;
    ledger_.count_recorded(taken->events);
    store_->hold_beside(taken->bytes);
    return taken->latest_ns;
}

// Once a write to the log failed, the log ends there (it stays readable up
// to the failure), and what its writer was handed since is not in it: those
// events are taken back from `recorded` and counted lost, and the stream's
// reader is told with one posix_trace_error event, queued where the stream
// learned of the failure.
void Stream::account_log_failure_locked()
{
    if (uint64_t unwritten = log_->take_unwritten_events()) {
        ledger_.take_back_recorded(unwritten);
        ledger_.count_stream_loss(StreamLoss::Unwritten, unwritten);
    }
    int err = log_->first_error();
    if (!err)
        return;
    // Runs held can go nowhere now; unlike the stream's events, they are
    // not read from the stream either.
    if (uint64_t held = runs_ ? runs_->drop_all() : 0) {
        ledger_.take_back_recorded(held);
        ledger_.count_stream_loss(StreamLoss::Unwritten, held);
        store_->forget_beside();
    }
    if (log_error_reported_)
        return;
    log_error_reported_ = true;
    posix_trace_error_data error{err};
    queue_system_event_locked(POSIX_TRACE_ERROR, monotonic_now(), &error, sizeof error);
}

// A flush into a failed log: every event it would hand over is lost, and
// counted so, but the posix_trace_error event stays for the stream's
// reader; it is the oldest event left, so the order holds.
void Stream::drop_for_failed_log_locked()
{
    uint64_t dropped = 0;
    pt_record report;
    posix_trace_overflow_data loss;
    while (take_loss_report_locked(report, loss))
        ++dropped;
    pt_record error_record{};
    std::optional<posix_trace_error_data> error;
    while (!store_->empty()) {
        const pt_record &record = store_->front();
        if (record.event_id == POSIX_TRACE_ERROR && record.data_len == sizeof *error) {
            error_record = record;
            error.emplace();
            std::memcpy(&*error, record.data, sizeof *error);
        } else {
            ++dropped;
        }
        store_->pop();
    }
    if (error)
        store_->push(error_record, &*error); // already counted, already in realtime
    if (runs_)
        dropped += runs_->drop_all();
    store_->forget_beside();
    ledger_.take_back_recorded(dropped);
    ledger_.count_stream_loss(StreamLoss::Unwritten, dropped);
    full_policy_->after_flush(*store_);
}

// Log full policy UNTIL_FULL: the log's last event is a stop event, stamped
// with the first event that did not fit, in the room the writer kept for
// it. The stream stops too, so the kernel records nothing the log would
// discard; posix_trace_clear or posix_trace_start runs it again.
void Stream::close_full_log_locked(uint64_t timestamp_ns)
{
    posix_trace_stop_data cause{POSIX_TRACE_STOP_LOG_FULL};
    if (log_->append_closing_stop(system_record(POSIX_TRACE_STOP, timestamp_ns, sizeof cause),
                                  &cause))
        ledger_.count_recorded(); // an event of the stream's, as any other in the log
    if (phase_ != StreamPhase::Running)
        return;
    set_kernel_state_locked(PT_STREAM_SUSPENDED);
    phase_ = StreamPhase::StoppedLogFull;
}

// The flush-start event goes into the emptied stream, after the events the
// flush took: it is in the log with the next flush. Through the merge, like
// every system event: a loss report queued at an earlier time comes before
// it, so the stream stays in time order.
void Stream::note_flush_start_locked(uint64_t monotonic_ns)
{
    queue_system_event_locked(POSIX_TRACE_FLUSH_START, monotonic_ns, nullptr, 0);
}

// One flush-stop event for each flush the log writer has finished.
void Stream::check_flush_done_locked()
{
    account_log_failure_locked();
    while (!flushes_.empty() && log_->done(flushes_.front())) {
        flushes_.pop_front();
        queue_system_event_locked(POSIX_TRACE_FLUSH_STOP, monotonic_now(), nullptr, 0);
    }
}

log::FinalState Stream::final_state_locked()
{
    log::FinalState state{};
    state.status.posix_stream_status = POSIX_TRACE_SUSPENDED;
    state.status.posix_stream_full_status =
        store_->full() ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    state.status.posix_stream_overrun_status =
        ledger_.overrun() ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    state.status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    state.status.posix_stream_flush_error = log_->first_error(); // the log's own status: close()
    state.recorded = ledger_.counters().recorded;
    state.lost_in_kernel = ledger_.counters().lost_in_kernel;
    state.lost_in_stream = ledger_.counters().lost_in_stream;
    state.types = event_types_locked();
    return state;
}

std::vector<log::NamedType> Stream::event_types_locked() const
{
    std::vector<log::NamedType> types;
    for (trace_event_id_t id : builtin_event_ids())
        if (auto name = event_name_locked(id))
            types.push_back({id, *name});
    for (trace_event_id_t id : user_events_->ids())
        if (auto name = event_name_locked(id))
            types.push_back({id, *name});
    for (size_t i = 0; probes_ && i < probes_->usdt_type_count(); ++i) {
        trace_event_id_t id = POSIX_TRACE_USDT_EVENT_FIRST + trace_event_id_t(i);
        if (auto name = event_name_locked(id))
            types.push_back({id, *name});
    }
    return types;
}

} // namespace posixtrace
