// Stream: the drain thread. It merges the rings and the system events, reports
// what the kernel lost, follows the traced processes, and delivers.
#include "stream/stream.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <cstring>

#include "stream/stream_internal.hpp"
#include "threads/td_notify.hpp"

namespace posixtrace {
using namespace stream_detail;

// ---- recording: drain thread ---------------------------------------------

void Stream::drain_loop(std::stop_token stop)
{
    epoll_event events[16];
    while (!stop.stop_requested()) {
        std::optional<timespec> timeout;
        {
            std::lock_guard lock(mutex_);
            timeout = drain_timeout_locked();
        }
        epoll_pwait2(epoll_.get(), events, 16, timeout ? &*timeout : nullptr, nullptr);
        drain_eventfd(wakeup_.get());
        if (stop.stop_requested())
            break;

        std::lock_guard lock(mutex_);
        if (log_)
            check_flush_done_locked();
        uint64_t ticket = flush_requested_;
        drain_pass_locked();
        // A flush is done once nothing stamped before its time can come.
        if (flush_completed_ < ticket && safe_ns_ > flush_until_ns_) {
            flush_completed_ = ticket;
            flushed_.notify_all();
        }
    }
}

// How long the drain thread may sleep: briefly while a flush waits for the
// merge's safe point to pass its time (by the clock margin, or until a
// record still being written is committed), a period while anything may
// come, else until woken.
std::optional<timespec> Stream::drain_timeout_locked() const
{
    if (merger_.behind()) // more to read at once, after readers had the lock
        return timespec{0, 0};
    if (flush_completed_ < flush_requested_)
        return to_timespec(kFlushRetryNs);
    if (running() || !pending_system_.empty() || merger_.holding() || images_to_forget_ ||
        kernel_->lifecycle_lost() != lifecycle_lost_seen_)
        return to_timespec(kDrainPeriodNs);
    return std::nullopt;
}

void Stream::drain_pass_locked()
{
    uint64_t now = monotonic_now();
    for (auto &source : sources_) {
        source->join_merge(merger_, now);
        report_given_up_locked(source->look_after(merger_, now));
    }
    LibraryThreads::refresh(library_threads_);
    rescan_after_lifecycle_loss_locked(now);
    report_kernel_losses_locked();
    account_refusals_locked(now);
    RingMerger::Sinks sinks{
        [this](const pt_record &record) { deliver_locked(record, record.data); },
        [this](SystemEvent &&event) { store_locked(event.header, event.data.data()); },
        [this](const pt_record &record) {
            if (uint64_t events = drop_record_locked(record))
                note_stream_loss_locked(StreamLoss::Late, events);
        }};
    safe_ns_ = merger_.merge(now, pending_system_, sinks);
    forget_delivered_filters_locked();
    if (images_to_forget_ && safe_ns_ > images_to_forget_->looked_ns) {
        user_events_->drop_images(images_to_forget_->images);
        images_to_forget_.reset();
    }
    last_pass_ns_ = now;
    ++passes_;
    if (uint64_t owed = ledger_.take_owed())
        queue_loss_events_locked({0, owed, 0}, merger_.last_delivered_ns());
    update_readable_locked();
}

// The stream follows its processes by their fork, exec, exit and link-map
// records. When one found no room, the stream looks at every traced process
// instead, at most once a period (longer in proportion past
// kProcessesRescannedEachPeriod processes: a process that keeps records
// from fitting cannot keep the drain reading /proc): probes are attached in
// the objects each maps now (a new image's, a dlopened library's),
// processes gone are forgotten, and so, once all they recorded is
// delivered, are the images no process runs any more. Events of an image
// the stream was not told of are named by that image's own names
// (StreamUserEvents).
void Stream::rescan_after_lifecycle_loss_locked(uint64_t now_ns)
{
    uint64_t lost = kernel_->lifecycle_lost();
    uint64_t period = kRescanPeriodNs *
                      std::max<uint64_t>(1, processes_rescanned_ / kProcessesRescannedEachPeriod);
    if (lost == lifecycle_lost_seen_ || !probes_ || now_ns - rescanned_ns_ < period)
        return;
    rescanned_ns_ = now_ns;
    KernelProgram::RunningImages running = kernel_->running_images();
    processes_rescanned_ = running.by_process.size();
    for (const auto &[pid, image] : running.by_process)
        probes_->refresh(pid);
    user_events_->look_again_at_objects();
    if (!running.complete)
        return; // one not listed may still run: nothing forgotten, looked at again next period
    lifecycle_lost_seen_ = lost;
    std::set<uint32_t> images;
    for (const auto &[pid, image] : running.by_process)
        images.insert(image);
    for (pid_t pid : probes_->processes())
        if (!running.by_process.count(pid))
            probes_->forget(pid);
    // Everything an image not running at the look recorded is stamped
    // before the look ended. An earlier look's images still known are
    // among these.
    images_to_forget_ = ImagesToForget{monotonic_now(), user_events_->images_not_in(images)};
}

// What the kernel side could not record is reported where it happened: a
// loss this pass sees was not counted when the previous pass looked, so it
// happened after that look, and its report is stamped there (less the
// clock margin, never before what was delivered). It therefore comes before
// every event stamped after the loss, whatever CPU recorded it.
void Stream::report_kernel_losses_locked()
{
    uint64_t skipped = 0, looked_ns = last_pass_ns_;
    // Every few passes, and once for each flush (a stop is one): what was
    // skipped before it is reported before the events that follow it.
    if (passes_ % kMissesPeriodPasses == 0 || misses_flush_ticket_ != flush_requested_) {
        misses_flush_ticket_ = flush_requested_;
        skipped = ledger_.fresh_misses(kernel_->recursion_misses_total());
        if (skipped) // they happened after the previous reading of the misses
            looked_ns = std::min(looked_ns, misses_read_ns_);
        misses_read_ns_ = last_pass_ns_;
    }
    SourceLosses fresh = ledger_.fresh_transport(transport_losses_locked());
    uint64_t lost = fresh.ring_full + fresh.unreported_switches + skipped;
    if (!lost)
        return;
    ledger_.count_kernel_loss(fresh.ring_full, fresh.unreported_switches, skipped);
    queue_loss_events_locked({lost, 0, 0}, report_time_locked(looked_ns));
}

// A lane record given up held its ring back from where it was reserved:
// its loss is reported there, so before the events its thread made since
// (at another nesting level, held back by it until now). Counted as a
// full ring's, whose report it would otherwise be, later.
void Stream::report_given_up_locked(const RingMerger::GivenUp &given_up)
{
    if (!given_up.records)
        return;
    ledger_.count_kernel_loss(given_up.records, 0, 0);
    queue_loss_events_locked({given_up.records, 0, 0}, report_time_locked(given_up.reserved_by_ns));
}

// When to stamp the report of something counted after a look at `looked_ns`:
// there, less the clock margin, and never before what was delivered, nor
// before the latest start: the kernel records nothing while suspended, and
// the stop before it read every loss counted until then (a stop is a flush).
// Without that floor, a stream whose first pass after its start came once a
// burst had filled a ring reported the loss before its start event, at the
// last look taken while it was suspended.
uint64_t Stream::report_time_locked(uint64_t looked_ns) const
{
    uint64_t margin = RingMerger::kClockMarginNs;
    return std::max(
        {looked_ns > margin ? looked_ns - margin : 0, merger_.last_delivered_ns(), started_ns_});
}

// What POSIX_TRACE_UNTIL_FULL refused in the kernel is taken as the kernel
// counts it, every pass and at each restart, so a refusal counted just after
// a restart is not missed. While the stream is full, refusals join the report
// its restart makes; otherwise they are reported like the kernel's losses, at
// the time of the previous reading (they happened after it).
void Stream::account_refusals_locked(uint64_t now_ns)
{
    uint64_t since = 0;
    uint64_t fresh = ledger_.fresh_refusals(refused_while_full_locked(), now_ns, since);
    if (!fresh)
        return;
    ledger_.count_stream_loss(StreamLoss::Refused, fresh);
    if (phase_ == StreamPhase::StoppedFull) {
        store_->add_refused(fresh);
        return;
    }
    queue_loss_events_locked({0, fresh, 0}, report_time_locked(since));
}

// Records dropped on their way to the stream are reported by the next
// pass, before anything younger than what was delivered.
void Stream::note_stream_loss_locked(StreamLoss kind, uint64_t count)
{
    ledger_.count_stream_loss(kind, count);
    ledger_.owe_report(count);
}

void Stream::deliver_locked(const pt_record &record, const uint8_t *data)
{
    if (is_lifecycle_record(record))
        follow_lifecycle_locked(record);
    else if (about_library_thread(record, data))
        return;
    else if (is_thread_event(record) && thread_agents_.count(pid_t(record.pid)))
        td_report(record.event_id - POSIX_TRACE_TD_EVENT_FIRST + 1);
    if (record.flags & PT_RECORD_NOTICE_ONLY)
        return;
    if (record.timestamp_ns < discard_before_ns_)
        return;                                   // recorded before posix_trace_clear
    if (record.timestamp_ns < accept_after_ns_) { // recorded before an UNTIL_FULL restart
        if (uint64_t events = drop_record_locked(record))
            note_stream_loss_locked(StreamLoss::Refused, events);
        return;
    }
    if (record.event_id == POSIX_TRACE_TD_EVENT_FIRST + PT_TD_CONCURRENCY - 1 &&
        pid_t(record.pid) == creator_pid_ && record.data_len == sizeof(pt_td_data)) {
        pt_td_data counted; // the process's threads, less the library's own
        std::memcpy(&counted, data, sizeof counted);
        counted.value -=
            std::min<uint64_t>(counted.value, library_threads_.alive_at(record.timestamp_ns));
        store_locked(record, &counted);
        return;
    }
    if (is_user_event(record)) { // in the numbering of the stream, not of the process
        pt_record header = record;
        header.event_id = user_events_->stream_id(pid_t(record.pid), record.image, record.event_id);
        if (header.event_id != record.event_id &&
            filtered_at_locked(header.event_id, record.timestamp_ns))
            return;
        store_locked(header, data);
        return;
    }
    if (record.event_id == POSIX_TRACE_OVERFLOW) {
        deliver_thread_report_locked(record, data);
        return;
    }
    if (is_thread_event(record))
        track_sleep_locked(record, data);
    store_locked(record, data);
}

// The kernel's report that it hid scheduler events of one thread.
void Stream::deliver_thread_report_locked(const pt_record &record, const uint8_t *data)
{
    posix_trace_overflow_data lost;
    std::memcpy(&lost, data, sizeof lost);
    if (note_hidden_wakeup_locked(record)) {
        ++lost.lost;
        ++lost.lost_in_kernel;
    }
    store_locked(record, &lost);
    ledger_.count_kernel_loss(0, lost.lost_in_kernel, 0);
    if (!filtered_locked(POSIX_TRACE_RESUME))
        store_locked(system_record(POSIX_TRACE_RESUME, record.timestamp_ns, 0), nullptr);
}

// A record the stream does not deliver: processes still come and go, so a
// lifecycle record is followed; returns how many events are lost with it (a
// notice is no event, nor is a record from before posix_trace_clear; the
// kernel's report about a thread stands for its count).
uint64_t Stream::drop_record_locked(const pt_record &record)
{
    if (is_lifecycle_record(record))
        follow_lifecycle_locked(record);
    if ((record.flags & PT_RECORD_NOTICE_ONLY) || record.timestamp_ns < discard_before_ns_)
        return 0;
    if (record.event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data lost;
        std::memcpy(&lost, record.data, sizeof lost);
        return lost.lost;
    }
    return 1;
}

// Drops what the kernel recorded and the merge has not delivered; returns
// how many events that was.
uint64_t Stream::discard_recorded_locked()
{
    uint64_t events = 0;
    merger_.discard_all([&](const pt_record &record) { events += drop_record_locked(record); });
    return events;
}

bool Stream::is_thread_event(const pt_record &record)
{
    return record.cpu != UINT16_MAX && record.event_id >= POSIX_TRACE_TD_EVENT_FIRST &&
           record.event_id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT;
}

// The trace system never traces itself: events about the library's own
// threads in this process (by them, or td_create of one) are left out. The
// library's threads never call posix_trace_event(): a user event is always
// the application's, whatever thread once had its tid.
bool Stream::about_library_thread(const pt_record &record, const uint8_t *data) const
{
    if (record.cpu == UINT16_MAX || pid_t(record.pid) != creator_pid_ || is_user_event(record))
        return false;
    if (!is_thread_event(record) || record.data_len != sizeof(pt_td_data))
        return library_threads_.hides(pid_t(record.tid), record.timestamp_ns, nullptr);
    pt_td_data about;
    std::memcpy(&about, data, sizeof about);
    char name[sizeof about.name + 1] = {};
    std::memcpy(name, about.name, sizeof about.name);
    if (library_threads_.hides(about.tid, record.timestamp_ns, name))
        return true;
    if (about.tid != pid_t(record.tid) &&
        library_threads_.hides(pid_t(record.tid), record.timestamp_ns, nullptr))
        return true;
    if (record.event_id == POSIX_TRACE_TD_EVENT_FIRST + PT_TD_CREATE - 1)
        return library_threads_.hides(pid_t(about.value), record.timestamp_ns, nullptr);
    return false;
}

// Which threads went to sleep (td_sleep) and have not been seen woken
// (td_ready) since. Only kept where both are recorded for every thread.
void Stream::track_sleep_locked(const pt_record &record, const uint8_t *data)
{
    if (filtered_locked(POSIX_TRACE_TD_EVENT_FIRST + PT_TD_SLEEP - 1) ||
        filtered_locked(POSIX_TRACE_TD_EVENT_FIRST + PT_TD_READY - 1) ||
        thread_agents_.count(pid_t(record.pid)))
        return;
    pt_td_data about;
    std::memcpy(&about, data, sizeof about);
    if (record.event_id == POSIX_TRACE_TD_EVENT_FIRST + PT_TD_SLEEP - 1)
        asleep_since_[about.tid] = record.timestamp_ns;
    else if (record.event_id == POSIX_TRACE_TD_EVENT_FIRST + PT_TD_READY - 1 ||
             record.event_id == POSIX_TRACE_TD_EVENT_FIRST + PT_TD_SWITCHTO - 1 ||
             record.event_id == POSIX_TRACE_TD_EVENT_FIRST + PT_TD_DEATH - 1)
        asleep_since_.erase(about.tid); // woken, or seen running: settled
}

// The kernel reports a thread it found running without having seen it
// switched in. If that thread was last seen going to sleep, it was woken
// unseen too: the kernels that skip sched_switch skip sched_wakeup with it
// (measured: every td_ready missing in the sleeper test came with a hidden
// switch-in). True when that wakeup is to be counted in the report, which
// then says one more event lost. Not after a gap in recording (a stop, a
// filter change, a loss), where the wakeup may simply not have been recorded.
bool Stream::note_hidden_wakeup_locked(const pt_record &report)
{
    auto found = asleep_since_.find(pid_t(report.tid));
    if (found == asleep_since_.end())
        return false;
    bool trusted = found->second > sleeps_trusted_after_ns_;
    asleep_since_.erase(found);
    return trusted;
}

bool Stream::is_user_event(const pt_record &record)
{
    return record.cpu != UINT16_MAX && record.event_id >= POSIX_TRACE_USER_EVENT_FIRST &&
           record.event_id < POSIX_TRACE_USDT_EVENT_FIRST;
}

bool Stream::is_lifecycle_record(const pt_record &record)
{
    return record.event_id == PT_EVENT_PROCESS_FORK || record.event_id == PT_EVENT_PROCESS_EXEC ||
           record.event_id == PT_EVENT_PROCESS_EXIT ||
           record.event_id == PT_EVENT_LINK_MAP_CHANGED || record.event_id == PT_EVENT_USER_NAME;
}

// A new image or new libraries in a traced process: attach their probes.
// An inheriting stream's probes already fire in every process that maps an
// object, so a fork needs nothing; an exec or a dlopen brings new objects.
void Stream::follow_lifecycle_locked(const pt_record &record)
{
    if (record.cpu == UINT16_MAX || !probes_)
        return; // a system event the stream made, not the kernel
    pid_t pid = pid_t(record.pid);
    switch (record.event_id) {
    case PT_EVENT_PROCESS_FORK:
        if (record.data_len >= 12) { // the child's image follows (PT_FORK_RECORD_DATA)
            uint32_t child, child_image;
            std::memcpy(&child, record.data + 4, sizeof child);
            std::memcpy(&child_image, record.data + 12, sizeof child_image);
            user_events_->forked(pid, record.image, pid_t(child), child_image);
        }
        break;
    case PT_EVENT_PROCESS_EXEC:
        user_events_->execed(pid, record.image);
        probes_->refresh(pid);
        break;
    case PT_EVENT_LINK_MAP_CHANGED:
        user_events_->objects_changed(record.image);
        probes_->refresh(pid);
        break;
    case PT_EVENT_PROCESS_EXIT:
        probes_->forget(pid);
        user_events_->exited(pid, record.image);
        break;
    case PT_EVENT_USER_NAME:
        if (record.data_len == sizeof(pt_user_name)) {
            pt_user_name name;
            std::memcpy(&name, record.data, sizeof name);
            user_events_->learned(
                pid, record.image, name.event_id,
                std::string(name.name, std::min<size_t>(name.length, sizeof name.name - 1)));
        }
        break;
    default:
        break;
    }
}

} // namespace posixtrace
