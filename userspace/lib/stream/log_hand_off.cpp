#include "stream/log_hand_off.hpp"

#include <algorithm>
#include <cstring>

#include "util/clock.hpp"

namespace posixtrace {

LogHandOff::LogHandOff(std::unique_ptr<log::LogWriter> log, const Parts &parts, Owner &owner)
    : parts_(parts), owner_(owner), log_(std::move(log))
{
}

// Every event the stream hands over later is stamped no earlier than what
// was delivered, nor than the merge's safe point: a record is delivered
// past it, a run was not read when it passed, a system event is queued
// there at the earliest. Realtime.
uint64_t LogHandOff::handed_over_before_ns() const
{
    return uint64_t(int64_t(std::max(parts_.merger.last_delivered_ns(), parts_.drain.safe_ns())) +
                    parts_.realtime_offset_ns);
}

void LogHandOff::take_runs(LaneRuns::Judge judge)
{
    if (!log_->runs_taken())
        return;
    auto runs = std::make_unique<LaneRuns>(*log_, parts_.realtime_offset_ns);
    if (!runs->valid())
        return; // the merge takes every record, as without a log
    runs_ = std::move(runs);
    judge_ = std::move(judge);
}

bool LogHandOff::move_all()
{
    account_failure();
    if (log_->first_error()) {
        drop_for_failed_log();
        return false;
    }
    auto name_of = [this](uint32_t id) { return parts_.event_types.name_of(id); };
    uint64_t later_ns = handed_over_before_ns();
    pt_record report;
    posix_trace_overflow_data loss;
    auto append = [&](const pt_record &record, const void *data) {
        if (runs_)
            runs_->hand_over_before(record.timestamp_ns, later_ns);
        if (log_->append(record, data, name_of) == log::LogWriter::Appended::filled_it)
            close_full_log(record.timestamp_ns);
    };
    while (parts_.reader.take_loss_report(report, loss))
        append(report, &loss);
    while (const StoredEvent *event = parts_.store.peek()) {
        append(*event->header, event->data); // a stream with a log lends nothing: stamped realtime
        parts_.store.pop_peeked();
    }
    if (runs_)
        runs_->hand_over_before(UINT64_MAX, later_ns);
    parts_.store.forget_beside();
    parts_.full_policy.after_flush(parts_.store);
    flushes_.push_back(log_->submit(later_ns));
    return true;
}

// The flush-start event goes into the emptied stream, after the events the
// flush took: it is in the log with the next flush. Through the merge, like
// every system event: a loss report queued at an earlier time comes before
// it, so the stream stays in time order.
bool LogHandOff::flush(uint64_t start_ns)
{
    if (!move_all())
        return false;
    parts_.drain.queue_system_event(POSIX_TRACE_FLUSH_START, start_ns, nullptr, 0);
    return true;
}

// At the first getnext. An event stamped before the merge's safe point
// joins the store in time order (nothing older can come now); a later one
// is queued for the merge to deliver in its place among the records still
// to come, and counted recorded when it is stored, as they are. The room
// the runs held is the room their events take in the store. Runs hold
// lane after lane: each side is sorted first.
void LogHandOff::read_with_getnext()
{
    if (std::exchange(read_with_getnext_, true) || !runs_ || !runs_->bytes_held())
        return;
    int64_t offset = parts_.realtime_offset_ns;
    uint64_t settled_below_ns = uint64_t(int64_t(parts_.drain.safe_ns()) + offset);
    std::vector<StreamStore::HeldEvent> settled, later;
    runs_->give_back([&](const pt_record &record, const uint8_t *data) {
        auto &side = record.timestamp_ns < settled_below_ns ? settled : later;
        side.push_back({{data, data + record.data_len}, record});
    });
    parts_.store.forget_beside();
    auto by_stamp = [](const auto &a, const auto &b) {
        return a.header.timestamp_ns < b.header.timestamp_ns;
    };
    std::stable_sort(later.begin(), later.end(), by_stamp);
    for (StreamStore::HeldEvent &event : later) {
        event.header.timestamp_ns = uint64_t(int64_t(event.header.timestamp_ns) - offset);
        parts_.drain.queue_recorded(event.header, event.data.data());
    }
    parts_.ledger.take_back_recorded(later.size());
    std::stable_sort(settled.begin(), settled.end(), by_stamp);
    if (uint64_t refused = parts_.store.merge_in(settled)) {
        parts_.ledger.take_back_recorded(refused);
        parts_.ledger.count_stream_loss(StreamLoss::Refused, refused);
    }
}

// The chunk's bytes bound what its run takes, names aside.
std::optional<uint64_t> LogHandOff::take_chunk(const RingMerger::Chunk &chunk)
{
    if (!runs_ || log_->first_error() || read_with_getnext_)
        return std::nullopt; // the stream keeps them, to be read or as it keeps every event now
    size_t bytes = size_t(chunk.to - chunk.from);
    if (!parts_.store.fits_beside(bytes) ||
        runs_->bytes_held() + bytes > LaneRuns::kHeldBytesBeforeFlush) {
        flush(parts_.merger.last_delivered_ns());
        if (!parts_.store.fits_beside(bytes))
            return std::nullopt; // a chunk larger than the stream: the merge takes it as it can
    }
    std::optional<LaneRuns::Taken> taken = runs_->take(chunk, judge_);
    if (!taken)
        return std::nullopt;
    parts_.ledger.count_recorded(taken->events);
    parts_.store.hold_beside(taken->bytes);
    return taken->latest_ns;
}

// Once a write to the log failed, the log ends there (it stays readable up
// to the failure), and what its writer was handed since is not in it: those
// events are taken back from `recorded` and counted lost, and the stream's
// reader is told with one posix_trace_error event, queued where the stream
// learned of the failure.
void LogHandOff::account_failure()
{
    if (uint64_t unwritten = log_->take_unwritten_events()) {
        parts_.ledger.take_back_recorded(unwritten);
        parts_.ledger.count_stream_loss(StreamLoss::Unwritten, unwritten);
    }
    int err = log_->first_error();
    if (!err)
        return;
    // Runs held can go nowhere now; unlike the stream's events, they are
    // not read from the stream either.
    if (uint64_t held = runs_ ? runs_->drop_all() : 0) {
        parts_.ledger.take_back_recorded(held);
        parts_.ledger.count_stream_loss(StreamLoss::Unwritten, held);
        parts_.store.forget_beside();
    }
    if (error_reported_)
        return;
    error_reported_ = true;
    posix_trace_error_data error{err};
    parts_.drain.queue_system_event(POSIX_TRACE_ERROR, clock_nanos(CLOCK_MONOTONIC), &error,
                                    sizeof error);
}

// A flush into a failed log: every event it would hand over is lost, and
// counted so, but the posix_trace_error event stays for the stream's
// reader; it is the oldest event left, so the order holds.
void LogHandOff::drop_for_failed_log()
{
    uint64_t dropped = 0;
    pt_record report;
    posix_trace_overflow_data loss;
    while (parts_.reader.take_loss_report(report, loss))
        ++dropped;
    pt_record error_record{};
    std::optional<posix_trace_error_data> error;
    while (const StoredEvent *event = parts_.store.peek()) {
        const pt_record &record = *event->header;
        if (record.event_id == POSIX_TRACE_ERROR && record.data_len == sizeof *error) {
            error_record = record;
            error.emplace();
            std::memcpy(&*error, event->data, sizeof *error);
        } else {
            ++dropped;
        }
        parts_.store.pop_peeked();
    }
    if (error)
        parts_.store.push(error_record, &*error); // already counted, already in realtime
    if (runs_)
        dropped += runs_->drop_all();
    parts_.store.forget_beside();
    parts_.ledger.take_back_recorded(dropped);
    parts_.ledger.count_stream_loss(StreamLoss::Unwritten, dropped);
    parts_.full_policy.after_flush(parts_.store);
}

// Log full policy UNTIL_FULL: the log's last event is a stop event, stamped
// with the first event that did not fit, in the room the writer kept for
// it. The stream stops too, so the kernel records nothing the log would
// discard; posix_trace_clear or posix_trace_start runs it again.
void LogHandOff::close_full_log(uint64_t timestamp_ns)
{
    posix_trace_stop_data cause{POSIX_TRACE_STOP_LOG_FULL};
    if (log_->append_closing_stop(
            parts_.system_events.record(POSIX_TRACE_STOP, timestamp_ns, sizeof cause), &cause))
        parts_.ledger.count_recorded(); // an event of the stream's, as any other in the log
    owner_.stop_for_full_log();
}

void LogHandOff::note_flushes_done()
{
    account_failure();
    while (!flushes_.empty() && log_->done(flushes_.front())) {
        flushes_.pop_front();
        parts_.drain.queue_system_event(POSIX_TRACE_FLUSH_STOP, clock_nanos(CLOCK_MONOTONIC),
                                        nullptr, 0);
    }
}

void LogHandOff::report_status(posix_trace_status_info &status)
{
    if (flushes_pending())
        status.posix_stream_flush_status = POSIX_TRACE_FLUSHING;
    status.posix_stream_flush_error = log_->take_flush_error();
    status.posix_log_full_status = log_->full() ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    if (log_->take_overrun())
        status.posix_log_overrun_status = POSIX_TRACE_OVERRUN;
}

// POSIX: the log is reset too. The flushes so far end with it: their
// blocks are gone. (An APPEND log, or one written to a pipe, keeps what it
// has: reset() says so with an error; a write of its blocks that fails
// later must not count the cleared events lost.)
void LogHandOff::clear()
{
    if (runs_)
        runs_->drop_all();
    log_->forget_unwritten_events();
    if (log_->reset() == 0) {
        flushes_.clear();
        error_reported_ = false; // the failed write went with the blocks
    }
}

log::FinalState LogHandOff::final_state() const
{
    log::FinalState state{};
    state.status.posix_stream_status = POSIX_TRACE_SUSPENDED;
    state.status.posix_stream_full_status =
        parts_.store.full() ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    state.status.posix_stream_overrun_status =
        parts_.ledger.overrun() ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    state.status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    state.status.posix_stream_flush_error = log_->first_error(); // the log's own status: close()
    state.recorded = parts_.ledger.counters().recorded;
    state.lost_in_kernel = parts_.ledger.counters().lost_in_kernel;
    state.lost_in_stream = parts_.ledger.counters().lost_in_stream;
    state.types = parts_.event_types.named();
    return state;
}

} // namespace posixtrace
