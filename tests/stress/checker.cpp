#include "checker.hpp"

#include <posix_trace/thread_db.h>

#include <cstring>

namespace stress {
namespace {

uint64_t nanos(const timespec &ts)
{
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

bool filtered(const trace_event_set_t &set, trace_event_id_t id)
{
    return (set.__bits[id / 64] >> (id % 64)) & 1;
}

constexpr trace_event_id_t td_id(td_event_e event)
{
    return POSIX_TRACE_TD_EVENT_ID(event);
}

} // namespace

Checker::Checker(const CheckerOptions &options) : options_(options), filter_(options.initial_filter)
{
}

void Checker::violation(const std::string &what)
{
    if (++violations_ == 1) {
        first_violations_.push_back(what + "; the events up to it, oldest first:");
        for (size_t i = 0; i < recent_.size(); ++i) {
            const Seen &seen = recent_[(recent_next_ + i) % recent_.size()];
            first_violations_.push_back(
                "      ts " + std::to_string(seen.ts) + " id " + std::to_string(seen.id) + " tid " +
                std::to_string(seen.tid) + " " + std::to_string(seen.detail));
        }
    } else if (violations_ <= 10) {
        first_violations_.push_back(what);
    }
}

void Checker::on_event(const posix_trace_event_info &info, const void *data, size_t length)
{
    ++events_;
    uint64_t ts = nanos(info.posix_timestamp);
    Seen seen{ts, info.posix_event_id, info.posix_tid, 0};
    if (length >= 16 &&
        (info.posix_event_id == options_.user_event || info.posix_event_id == POSIX_TRACE_OVERFLOW))
        std::memcpy(&seen.detail,
                    static_cast<const uint8_t *>(data) +
                        (info.posix_event_id == POSIX_TRACE_OVERFLOW ? 0 : 8),
                    8);
    if (recent_.size() < 24)
        recent_.push_back(seen);
    else
        recent_[recent_next_++ % recent_.size()] = seen;
    recent_next_ %= 24;
    if (ts < last_ts_)
        violation("timestamp " + std::to_string(last_ts_ - ts) +
                  " ns before the previous event's (id " + std::to_string(info.posix_event_id) +
                  ", tid " + std::to_string(info.posix_tid) + ")");
    last_ts_ = std::max(last_ts_, ts);
    trace_event_id_t id = info.posix_event_id;
    if (id == POSIX_TRACE_START) {
        state_ = State::Running;
        ++starts_;
        stopped_full_ = false;
    } else if (id == POSIX_TRACE_STOP) {
        state_ = State::Stopped;
        posix_trace_stop_data cause{};
        if (length >= sizeof cause)
            std::memcpy(&cause, data, sizeof cause);
        stops_by_call_ += cause.cause == POSIX_TRACE_STOP_BY_CALL;
        stopped_full_ = cause.cause == POSIX_TRACE_STOP_STREAM_FULL;
    } else if (id == POSIX_TRACE_FILTER && length >= sizeof(posix_trace_filter_data)) {
        std::memcpy(&filter_, static_cast<const uint8_t *>(data) + sizeof(trace_event_set_t),
                    sizeof filter_);
        filter_known_ = true;
    } else if (id == POSIX_TRACE_OVERFLOW) {
        on_overflow(info, data, length);
    } else if (id == POSIX_TRACE_RESUME) {
        on_resume(info);
    } else if (id == POSIX_TRACE_PROCESS_FORK) {
        ++forks_;
    } else if (id >= POSIX_TRACE_TD_EVENT_FIRST &&
               id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT) {
        on_thread_event(info);
    } else if (id == options_.user_event || (options_.usdt_event && id == options_.usdt_event)) {
        if (state_ == State::Stopped && !options_.clears)
            violation("an emitter's event between a stop event and the next start event");
        if (filter_known_ && !options_.clears && filtered(filter_, id))
            violation("an event of type " + std::to_string(id) + " that the filter excludes");
        if (id == options_.user_event)
            on_user_event(data, length);
        else
            on_usdt_event(data, length);
    }
}

void Checker::on_overflow(const posix_trace_event_info &info, const void *data, size_t length)
{
    posix_trace_overflow_data loss{};
    if (length < sizeof loss) {
        violation("an overflow event without its counts");
        return;
    }
    std::memcpy(&loss, data, sizeof loss);
    if (loss.lost != loss.lost_in_kernel + loss.lost_in_stream)
        violation("an overflow event whose counts do not add up");
    lost_ += loss.lost;
    ++overflows_;
    if (info.posix_tid != 0) { // the kernel's report about one thread: switches it hid
        // Which switch, the thread's next event tells (place_report).
        switches_[info.posix_tid].unplaced_lost = loss.lost;
        lost_about_threads_ += loss.lost;
        ++thread_resumes_due_;
        return;
    }
    ++windows_open_;
    // Whatever was lost may have been a start, stop or filter event.
    state_ = State::Unknown;
    filter_known_ = false;
}

void Checker::on_resume(const posix_trace_event_info &info)
{
    if (thread_resumes_due_) {
        --thread_resumes_due_;
        return;
    }
    if (windows_open_) // a LOOP stream may have overwritten the overflow event
        --windows_open_;
    last_window_end_ts_ = nanos(info.posix_timestamp);
}

void Checker::check_sequence(Sequence &sequence, uint64_t number, const char *name,
                             uint32_t emitter)
{
    std::string which = std::string(name) + " sequence of emitter " + std::to_string(emitter);
    if (int64_t(number) <= sequence.last) {
        violation(which + ": " + std::to_string(number) + " after " +
                  std::to_string(sequence.last));
        return;
    }
    // Every gap needs losses reported before the event after it. A loss is
    // reported at the time of the drain pass before the one that counted
    // it, so its report may come a little before the last event preceding
    // the gap: what must hold is that the gaps seen so far, in all
    // sequences, never exceed the losses reported so far.
    uint64_t gap = number - uint64_t(sequence.last + 1);
    gaps_ += gap;
    if (gap && !options_.controls_storm && gaps_ > lost_)
        violation(which + ": " + std::to_string(gap) + " missing before " + std::to_string(number) +
                  "; " + std::to_string(gaps_) + " missing so far in all sequences, " +
                  std::to_string(lost_) + " lost reported");
    sequence.last = int64_t(number);
    ++sequence.delivered;
}

void Checker::on_user_event(const void *data, size_t length)
{
    Payload payload;
    if (length != sizeof payload) {
        violation("a user event of " + std::to_string(length) + " bytes");
        return;
    }
    std::memcpy(&payload, data, sizeof payload);
    if (payload.emitter >= kMaxEmitters || payload.kind > kHandler) {
        violation("a user event with a payload no emitter wrote");
        return;
    }
    Sequence &sequence = payload.kind == kMain ? main_[payload.emitter] : handler_[payload.emitter];
    check_sequence(sequence, payload.seq, payload.kind == kMain ? "main" : "handler",
                   payload.emitter);
}

void Checker::on_usdt_event(const void *data, size_t length)
{
    uint64_t args[2];
    if (length < sizeof args) {
        violation("a USDT tick without its two arguments");
        return;
    }
    std::memcpy(args, data, sizeof args);
    if (args[0] >= kMaxEmitters) {
        violation("a USDT tick of no emitter");
        return;
    }
    check_sequence(usdt_[args[0]], args[1], "usdt", uint32_t(args[0]));
}

// A report about a thread comes just before its td_switchfrom when the
// kernel hid the switch in (and then counts the wakeup it hid with it, if
// any); otherwise it hid a switch out. With nothing after it, its count
// alone tells (1: a switch in).
void Checker::place_report(ThreadSwitches &thread, bool next_is_switchfrom)
{
    if (!thread.unplaced_lost)
        return;
    (next_is_switchfrom ? thread.hidden_in : thread.hidden_out) += 1;
    thread.unplaced_lost = 0;
}

void Checker::on_thread_event(const posix_trace_event_info &info)
{
    trace_event_id_t id = info.posix_event_id;
    if (id == td_id(TD_CREATE)) {
        ++creates_;
        return;
    }
    bool to = id == td_id(TD_SWITCHTO), from = id == td_id(TD_SWITCHFROM);
    ThreadSwitches &thread = switches_[info.posix_tid];
    place_report(thread, from);
    if (id == td_id(TD_SLEEP) || id == td_id(TD_PREEMPT))
        ++thread.sleep_or_preempt;
    if (!to && !from)
        return;
    // Excused by a loss reported since the thread's previous switch event,
    // or by a window of losses (from an overflow event to its resume) that
    // is open or ended after it: the events a report counts were lost in
    // its window, whichever CPU lost them. Under a storm, a clear drops
    // events without a trace: not judged.
    bool excused = lost_ > thread.lost_at_last || windows_open_ ||
                   last_window_end_ts_ >= thread.last_ts || options_.controls_storm;
    if (thread.seen && thread.on_cpu == to && !excused)
        violation(std::string("two td_") + (to ? "switchto" : "switchfrom") + " in a row for tid " +
                  std::to_string(info.posix_tid) + " with no loss reported in between (at " +
                  std::to_string(thread.last_ts) + " and " +
                  std::to_string(nanos(info.posix_timestamp)) +
                  " ns, latest window of losses ended at " + std::to_string(last_window_end_ts_) +
                  " ns)");
    thread.on_cpu = to;
    thread.seen = true;
    thread.lost_at_last = lost_;
    thread.last_ts = nanos(info.posix_timestamp);
    (to ? thread.to : thread.from) += 1;
}

std::vector<std::string> Checker::finish(const WorkloadCounts &counts, uint64_t counted_lost)
{
    uint64_t missing = 0;
    for (int index = 0; index < counts.emitters; ++index) {
        auto account = [&](const Sequence &sequence, uint64_t emitted, const char *name) {
            if (sequence.delivered > emitted || sequence.last >= int64_t(emitted))
                violation(std::string(name) + " sequence of emitter " + std::to_string(index) +
                          ": more delivered than emitted");
            else
                missing += emitted - sequence.delivered;
        };
        account(main_[index], counts.emitted[index], "main");
        account(handler_[index], counts.handled[index], "handler");
        if (options_.usdt_event)
            account(usdt_[index], counts.emitted[index], "usdt");
    }
    // The stream's own events count when lost too: outside a storm it made
    // one start event, and one stop event unless it had stopped itself
    // because it was full (posix_trace_stop on a suspended stream records
    // nothing); a LOOP stream can overwrite the start. The events an
    // UNTIL_FULL stream makes itself are never lost.
    missing += (starts_ ? 0 : 1) + (stops_by_call_ || stopped_full_ ? 0 : 1);
    uint64_t other_losses = lost_ - lost_about_threads_;
    if (!options_.controls_storm) {
        if (options_.only_emitter_events ? missing != counted_lost : missing > counted_lost)
            violation(std::to_string(missing) + " emitted events not delivered, " +
                      std::to_string(counted_lost) + " counted lost");
        if (lost_ > counted_lost)
            violation(std::to_string(lost_) + " lost in overflow events, " +
                      std::to_string(counted_lost) + " counted");
    }
    if (options_.thread_events && !options_.controls_storm)
        check_switch_counts(counts, other_losses == 0);
    if (options_.thread_events && !options_.controls_storm && other_losses == 0) {
        if (forks_ != counts.forks)
            violation(std::to_string(forks_) + " process_fork events for " +
                      std::to_string(counts.forks) + " forks");
        if (creates_ != counts.threads_created)
            violation(std::to_string(creates_) + " td_create events for " +
                      std::to_string(counts.threads_created) + " threads created");
    }
    if (violations_ > first_violations_.size())
        first_violations_.push_back(
            "... " + std::to_string(violations_ - first_violations_.size()) + " more");
    return first_violations_;
}

// Each emitter was off CPU when the trace started and when it stopped, so
// it was switched in as often as out: as often as the kernel counted, less
// the switches the kernel hid (each reported about that thread).
void Checker::check_switch_counts(const WorkloadCounts &counts, bool exact)
{
    for (int index = 0; index < counts.emitters; ++index) {
        ThreadSwitches &thread = switches_[counts.tids[index]];
        place_report(thread, thread.unplaced_lost == 1);
        uint64_t kernel = uint64_t(counts.switches[index]);
        std::string who = "emitter " + std::to_string(index) + " (tid " +
                          std::to_string(counts.tids[index]) + ", " + std::to_string(kernel) +
                          " switches): ";
        if (exact &&
            (thread.from + thread.hidden_out != kernel || thread.to + thread.hidden_in != kernel))
            violation(who + std::to_string(thread.to) + " td_switchto, " +
                      std::to_string(thread.from) + " td_switchfrom, " +
                      std::to_string(thread.hidden_in) + " in and " +
                      std::to_string(thread.hidden_out) + " out reported hidden");
        if (exact && thread.sleep_or_preempt != thread.from)
            violation(who + std::to_string(thread.sleep_or_preempt) +
                      " td_sleep + td_preempt for " + std::to_string(thread.from) +
                      " td_switchfrom");
        if (!exact && (thread.from > kernel || thread.to > kernel))
            violation(who + "more switches traced than the kernel made");
    }
}

std::string Checker::summary() const
{
    return std::to_string(events_) + " events, " + std::to_string(lost_) + " lost (" +
           std::to_string(lost_about_threads_) + " in switches the kernel did not report), " +
           std::to_string(overflows_) + " overflow events";
}

} // namespace stress
