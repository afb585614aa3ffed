#include "stream/stream.hpp"

#include <bpf/libbpf.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <posix_trace/usdt.h>

#include "events/event_names.hpp"
#include "events/event_set.hpp"
#include "threads/td_notify.hpp"
#include "util/clock.hpp"
#include "util/library_threads.hpp"
#include "util/process_id.hpp"

namespace posixtrace {
namespace {

// Rings are drained this often while the stream runs; the BPF side wakes the
// drain thread earlier when a ring passes a quarter full.
constexpr uint64_t kDrainPeriodNs = 1'000'000;
// A flush waits for the merge's safe point to pass its time: passes this
// far apart until it does.
constexpr uint64_t kFlushRetryNs = 50'000;
// Reading the programs' recursion misses is a system call per program: done
// every this many passes.
constexpr uint64_t kMissesPeriodPasses = 8;
constexpr size_t kMinRingBytes = 256 * 1024;
constexpr size_t kMaxRingBytes = 64u << 20;

// The rings only carry records from the kernel to the drain, which empties
// them every millisecond: together they hold about one stream, so the
// kernel memory a stream pins does not grow with the number of CPUs.
size_t ring_bytes_for(size_t stream_size)
{
    size_t share = stream_size / size_t(std::max(1, libbpf_num_possible_cpus()));
    size_t bytes = kMinRingBytes;
    while (bytes < share && bytes < kMaxRingBytes)
        bytes *= 2;
    return bytes;
}

const size_t kStopEventBytes = stored_event_size(sizeof(posix_trace_stop_data));
const size_t kLossEventsBytes =
    stored_event_size(sizeof(posix_trace_overflow_data)) + stored_event_size(0);

bool valid_abstime(const timespec *t)
{
    return t && t->tv_nsec >= 0 && t->tv_nsec < long(kNanosPerSecond) && t->tv_sec >= 0;
}

uint64_t monotonic_now()
{
    return clock_nanos(CLOCK_MONOTONIC);
}

void drain_eventfd(int fd)
{
    uint64_t value;
    while (read(fd, &value, sizeof value) == sizeof value) {
    }
}

} // namespace

int Stream::create(pid_t target, const Attributes &attributes, std::shared_ptr<Stream> &out,
                   int log_fd)
{
    auto stream = std::make_shared<Stream>();
    if (int err = stream->initialize(target, attributes, log_fd))
        return err;
    out = std::move(stream);
    return 0;
}

int Stream::initialize(pid_t target, const Attributes &attributes, int log_fd)
{
    attributes_ = attributes;
    creator_pid_ = getpid();
    target_pid_ = target;
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    attributes_.create_time = now;
    user_events_ = std::make_unique<StreamUserEvents>(target);
    if (log_fd >= 0) // first: a descriptor the log cannot use costs no BPF load
        if (int err = open_log(log_fd))
            return err;

    std::string binary;
    std::optional<ProcessFile> target_object; // open while `binary` is read
    if (target == getpid()) {
        binary = object_path_of(reinterpret_cast<void *>(&posix_trace_event));
    } else if ((target_object = user_event_object_of(target))) {
        binary = target_object->path();
    }
    KernelProgram::Config config{
        ring_bytes_for(attributes.stream_size), uint32_t(attributes.max_data_size), {}, {}};
    locate_user_event_arguments(binary, config);
    // Every record is reserved in a ring created after this: stamped later.
    uint64_t rings_created_after_ns = monotonic_now();
    if (int err = KernelProgram::load(config, kernel_))
        return err;
    if (int err = SystemSlot::acquire(slot_))
        return err;
    bool inherit = attributes.inheritance == POSIX_TRACE_INHERITED;
    if (inherit && target == getpid())
        shared_names_.emplace(); // one numbering for the stream's processes
    kernel_->set_inherit_children(inherit);
    if (int err = kernel_->trace_process(target))
        return err;
    if (int err = select_thread_event_programs_locked())
        return err;
    probes_ = std::make_unique<ProbeAttacher>(*kernel_, config, inherit);
    if (int err = probes_->refresh(target))
        return err;

    // stream-min-size is the room for the events a user plans for (POSIX:
    // a set of events whose max sizes add up to it is recorded without
    // loss); UNTIL_FULL's closing stop and loss report have their own.
    size_t closing_room = attributes.stream_full_policy == POSIX_TRACE_UNTIL_FULL
                              ? kStopEventBytes + kLossEventsBytes
                              : 0;
    buffer_ = std::make_unique<EventBuffer>(attributes.stream_size + closing_room);
    if (!buffer_->valid())
        return ENOMEM;
    for (int cpu = 0; cpu < kernel_->cpu_count(); ++cpu) {
        merger_.add_ring(RingReader(kernel_->ring_fd(cpu), kernel_->ring_bytes()),
                         rings_created_after_ns);
        if (!merger_.ready())
            return ENOMEM;
    }

    readable_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    wakeup_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
    if (!readable_ || !wakeup_ || !epoll_)
        return errno;
    epoll_event wake{EPOLLIN, {}};
    wake.data.fd = wakeup_.get();
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wakeup_.get(), &wake);
    for (int cpu = 0; cpu < kernel_->cpu_count(); ++cpu) {
        // Edge-triggered: a ring holding records younger than the reorder
        // window must not wake us again and again.
        epoll_event ring{EPOLLIN | EPOLLET, {}};
        ring.data.fd = kernel_->ring_fd(cpu);
        epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, ring.data.fd, &ring);
    }

    // One offset for the stream's life: the conversion keeps the order (and
    // the intervals) of the kernel's monotonic stamps exactly.
    realtime_offset_ns_ = realtime_minus_monotonic();
    last_pass_ns_ = rings_created_after_ns;
    drain_ =
        LibraryThreads::start("posixtrace-drn", [this](std::stop_token stop) { drain_loop(stop); });
    return 0;
}

int Stream::open_log(int log_fd)
{
    // The writing thread wakes the drain thread when a flush is done, so the
    // flush-stop event is recorded then.
    auto progress = [this] {
        if (wakeup_)
            wake_drain();
    };
    return log::LogWriter::create(log_fd, attributes_, target_pid_, event_types_locked(), progress,
                                  log_);
}

Stream::~Stream()
{
    shutdown();
}

bool Stream::owned_by_this_process() const
{
    return creator_pid_ == current_process_id();
}

// ---- control -------------------------------------------------------------

bool Stream::filtered_locked(trace_event_id_t id) const
{
    return event_set_contains(filter_, id);
}

pt_record Stream::system_record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const
{
    pt_record record{};
    record.timestamp_ns = timestamp_ns;
    record.pid = uint32_t(target_pid_);
    record.event_id = id;
    record.data_len = uint32_t(size);
    record.cpu = UINT16_MAX;
    return record;
}

// The queue stays sorted by timestamp (a loss report may be stamped before
// events queued earlier).
void Stream::queue_system_event_locked(trace_event_id_t id, uint64_t timestamp_ns, const void *data,
                                       size_t size)
{
    if (filtered_locked(id))
        return;
    const auto *bytes = static_cast<const uint8_t *>(data);
    auto at = pending_system_.end();
    while (at != pending_system_.begin() && std::prev(at)->header.timestamp_ns > timestamp_ns)
        --at;
    pending_system_.insert(at, {{bytes, bytes + size}, system_record(id, timestamp_ns, size)});
}

void Stream::queue_loss_events_locked(const LossReport &loss, uint64_t timestamp_ns)
{
    distrust_sleeps_locked(); // the lost events may include wakeups
    posix_trace_overflow_data data{loss.in_kernel + loss.in_stream, loss.in_kernel, loss.in_stream};
    queue_system_event_locked(POSIX_TRACE_OVERFLOW, timestamp_ns, &data, sizeof data);
    queue_system_event_locked(POSIX_TRACE_RESUME, timestamp_ns, nullptr, 0);
}

void Stream::wake_drain()
{
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wakeup_.get(), &one, sizeof one);
}

// A change of state opens a gap in what is recorded: a sleep seen before it
// says nothing of the wakeups after it (see note_hidden_wakeup_locked).
void Stream::set_kernel_state_locked(pt_stream_state state)
{
    kernel_->set_state(state);
    distrust_sleeps_locked();
}

void Stream::distrust_sleeps_locked()
{
    sleeps_trusted_after_ns_ = monotonic_now();
}

// The drain thread sleeps without a timeout while the stream is suspended:
// it must be woken to go back to its periodic drain.
void Stream::resume_running_locked()
{
    running_ = true;
    set_kernel_state_locked(PT_STREAM_RUNNING);
    wake_drain();
}

void Stream::flush_locked(std::unique_lock<std::mutex> &lock, uint64_t until_ns)
{
    flush_until_ns_ = std::max(flush_until_ns_, until_ns);
    uint64_t ticket = ++flush_requested_;
    wake_drain();
    flushed_.wait(lock, [&] { return flush_completed_ >= ticket || shut_down_; });
}

int Stream::start()
{
    std::unique_lock lock(mutex_);
    if (shut_down_)
        return EINVAL;
    if (running_ || full_)
        return 0; // POSIX: no event, no change
    uint64_t now = monotonic_now();
    if (lost_while_full_.any()) {
        queue_loss_events_locked(lost_while_full_, now);
        lost_while_full_ = {};
    }
    queue_system_event_locked(POSIX_TRACE_START, now, nullptr, 0);
    started_ns_ = now;
    stopped_by_full_log_ = false;
    resume_running_locked();
    return 0;
}

int Stream::stop()
{
    std::unique_lock lock(mutex_);
    if (shut_down_)
        return EINVAL;
    stop_locked(lock);
    return 0;
}

void Stream::stop_locked(std::unique_lock<std::mutex> &lock)
{
    stopped_by_full_log_ = false; // an explicit stop wins over a restart at clear
    if (!running_) {
        if (auto_stopped_) // an explicit stop wins over the automatic restart
            cancel_auto_restart_locked();
        return;
    }
    // Suspended first, then stamped: a record the kernel stamps after the
    // change is discarded there, so every recorded event precedes this one.
    set_kernel_state_locked(PT_STREAM_SUSPENDED);
    running_ = false;
    uint64_t now = monotonic_now();
    posix_trace_stop_data cause{POSIX_TRACE_STOP_BY_CALL};
    queue_system_event_locked(POSIX_TRACE_STOP, now, &cause, sizeof cause);
    flush_locked(lock, now);
}

int Stream::clear()
{
    std::unique_lock lock(mutex_);
    if (shut_down_)
        return EINVAL;
    // What was recorded until now is gone, and so are the losses counted
    // until now; a record stamped earlier that is still being written is
    // dropped when it comes. The cut-off is read last: nothing recorded
    // after it is discarded.
    kernel_losses_seen_ = kernel_->losses();
    refusals_seen_ = kernel_->refused_while_full();
    misses_seen_ = kernel_->recursion_misses_total();
    discard_recorded_locked();
    uint64_t now = monotonic_now();
    discard_before_ns_ = now;
    refusals_read_ns_ = now;
    sleeps_trusted_after_ns_ = now;
    asleep_since_.clear();
    stream_losses_due_ = 0;
    pending_system_.clear();
    buffer_->clear();
    head_loss_ = {};
    resume_due_ = false;
    lost_while_full_ = {};
    full_ = false;
    overrun_ = false;
    counters_ = {};
    losses_ = {};
    // POSIX: the log is reset too. The flushes so far end with it: their
    // blocks are gone. (An APPEND log, or one written to a pipe, keeps what
    // it has: reset() says so with an error.)
    if (log_ && log_->reset() == 0)
        flushes_.clear();
    if (auto_stopped_ || stopped_by_full_log_) {
        auto_stopped_ = false;
        stopped_by_full_log_ = false;
        resume_running_locked();
    }
    update_readable_locked();
    return 0;
}

int Stream::shutdown()
{
    std::optional<log::FinalState> final_state;
    {
        std::unique_lock lock(mutex_);
        if (shut_down_)
            return 0;
        if (log_ && drain_.joinable()) { // as posix_trace_stop, then a last flush
            // Earlier flushes end first, so that their flush-stop events
            // precede the stop event and reach the log (close() would wait
            // for their blocks anyway).
            wait_for_flushes_locked(lock);
            check_flush_done_locked();
            bool was_running = running_;
            stop_locked(lock); // drains the rings when it stops a running stream
            if (!was_running)
                flush_locked(lock, monotonic_now());
            move_to_log_locked();
            final_state = final_state_locked();
        }
        if (kernel_)
            set_kernel_state_locked(PT_STREAM_SUSPENDED);
        shut_down_ = true;
        update_readable_locked();
    }
    flushed_.notify_all();
    if (drain_.joinable()) {
        drain_.request_stop();
        wake_drain();
        drain_.join();
    }
    std::lock_guard lock(mutex_);
    merger_ = RingMerger();
    kernel_.reset();
    buffer_.reset();
    pending_system_.clear();
    epoll_.reset();
    int err = log_ && final_state ? log_->close(*final_state) : 0;
    log_.reset();
    return err;
}

// ---- the trace log -------------------------------------------------------------

int Stream::flush()
{
    std::unique_lock lock(mutex_);
    if (shut_down_ || !log_)
        return EINVAL;
    if (int err = log_->first_error())
        return err;
    uint64_t now = monotonic_now();
    flush_locked(lock, now); // what the kernel recorded until now is in the stream
    if (shut_down_)
        return EINVAL;
    move_to_log_locked();
    // After what the flush took (it may hold events stamped after `now`).
    note_flush_start_locked(std::max<uint64_t>(now, merger_.last_delivered_ns()));
    if (auto_stopped_)
        auto_restart_locked(); // an UNTIL_FULL stream emptied by the flush runs again
    update_readable_locked();
    return 0;
}

// A log left by an exec has no trailer: a reader takes it as a log whose
// writer stopped after its last block, and reads every event.
void Stream::flush_log_before_exec()
{
    std::unique_lock lock(mutex_);
    if (shut_down_ || !log_ || log_->first_error())
        return;
    flush_locked(lock, monotonic_now());
    if (shut_down_)
        return;
    move_to_log_locked();
    wait_for_flushes_locked(lock);
}

// Until the log writer has written every block handed to it; the lock is let
// go meanwhile (the writer does not take it, a shutdown may).
void Stream::wait_for_flushes_locked(std::unique_lock<std::mutex> &lock)
{
    while (!shut_down_ && !flushes_.empty() && !log_->done(flushes_.back())) {
        lock.unlock();
        usleep(100);
        lock.lock();
    }
}

// Hands every event of the stream, losses reported first, to the log writer.
void Stream::move_to_log_locked()
{
    auto name_of = [this](uint32_t id) { return event_name_locked(id); };
    pt_record report;
    posix_trace_overflow_data loss;
    auto append = [&](const pt_record &record, const void *data) {
        if (log_->append(record, data, name_of) == log::LogWriter::Appended::filled_it)
            close_full_log_locked(record.timestamp_ns);
    };
    while (take_loss_report_locked(report, loss))
        append(report, &loss);
    while (!buffer_->empty()) {
        const pt_record &record = buffer_->front();
        append(record, record.data);
        buffer_->pop();
    }
    if (attributes_.stream_full_policy != POSIX_TRACE_UNTIL_FULL)
        full_ = false;
    flushes_.push_back(log_->submit());
}

// Log full policy UNTIL_FULL: the log's last event is a stop event, stamped
// with the first event that did not fit, in the room the writer kept for
// it. The stream stops too, so the kernel records nothing the log would
// discard; posix_trace_clear or posix_trace_start runs it again.
void Stream::close_full_log_locked(uint64_t timestamp_ns)
{
    posix_trace_stop_data cause{POSIX_TRACE_STOP_LOG_FULL};
    log_->append_closing_stop(system_record(POSIX_TRACE_STOP, timestamp_ns, sizeof cause), &cause);
    if (!running_)
        return;
    set_kernel_state_locked(PT_STREAM_SUSPENDED);
    running_ = false;
    stopped_by_full_log_ = true;
}

// The flush-start event goes into the emptied stream, after the events the
// flush took: it is in the log with the next flush.
void Stream::note_flush_start_locked(uint64_t monotonic_ns)
{
    if (!filtered_locked(POSIX_TRACE_FLUSH_START))
        push_locked(system_record(POSIX_TRACE_FLUSH_START, monotonic_ns, 0), nullptr);
}

// One flush-stop event for each flush the log writer has finished.
void Stream::check_flush_done_locked()
{
    while (!flushes_.empty() && log_->done(flushes_.front())) {
        flushes_.pop_front();
        queue_system_event_locked(POSIX_TRACE_FLUSH_STOP, monotonic_now(), nullptr, 0);
    }
}

log::FinalState Stream::final_state_locked()
{
    log::FinalState state{};
    state.status.posix_stream_status = POSIX_TRACE_SUSPENDED;
    state.status.posix_stream_full_status = full_ ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    state.status.posix_stream_overrun_status =
        overrun_ ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    state.status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    state.status.posix_stream_flush_error = log_->first_error(); // the log's own status: close()
    state.recorded = counters_.recorded;
    state.lost_in_kernel = counters_.lost_in_kernel;
    state.lost_in_stream = counters_.lost_in_stream;
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

int Stream::set_filter(const trace_event_set_t &set, int how)
{
    std::unique_lock lock(mutex_);
    if (shut_down_)
        return EINVAL;
    trace_event_set_t updated = filter_;
    for (size_t i = 0; i < std::size(updated.__bits); ++i) {
        switch (how) {
        case POSIX_TRACE_SET_EVENTSET:
            updated.__bits[i] = set.__bits[i];
            break;
        case POSIX_TRACE_ADD_EVENTSET:
            updated.__bits[i] |= set.__bits[i];
            break;
        case POSIX_TRACE_SUB_EVENTSET:
            updated.__bits[i] &= ~set.__bits[i];
            break;
        default:
            return EINVAL;
        }
    }
    posix_trace_filter_data change{filter_, updated};
    // A thread event the new filter lets through needs its program attached
    // first: if the kernel refuses, the old filter stays and the caller is
    // told.
    filter_ = updated;
    if (int err = select_thread_event_programs_locked()) {
        filter_ = change.old_filter;
        select_thread_event_programs_locked();
        return err;
    }
    // In two steps around the filter event's stamp: what the new filter
    // excludes stops before it, what it admits starts after it. So no event
    // on either side of it contradicts it.
    trace_event_set_t both = updated;
    for (size_t i = 0; i < std::size(both.__bits); ++i)
        both.__bits[i] |= change.old_filter.__bits[i];
    kernel_->set_filter(both);
    uint64_t now = monotonic_now();
    kernel_->set_filter(filter_);
    distrust_sleeps_locked();
    if (running_)
        queue_system_event_locked(POSIX_TRACE_FILTER, now, &change, sizeof change);
    return 0;
}

trace_event_set_t Stream::filter() const
{
    std::lock_guard lock(mutex_);
    return filter_;
}

Attributes Stream::attributes() const
{
    return attributes_;
}

posix_trace_status_info Stream::take_status()
{
    std::lock_guard lock(mutex_);
    posix_trace_status_info status{};
    status.posix_stream_status = running_ ? POSIX_TRACE_RUNNING : POSIX_TRACE_SUSPENDED;
    status.posix_stream_full_status = full_ ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    status.posix_stream_overrun_status = overrun_ ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    status.posix_log_full_status = POSIX_TRACE_NOT_FULL;
    status.posix_log_overrun_status = POSIX_TRACE_NO_OVERRUN;
    status.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    status.posix_stream_flush_error = 0;
    if (log_) {
        if (!flushes_.empty() && !log_->done(flushes_.back()))
            status.posix_stream_flush_status = POSIX_TRACE_FLUSHING;
        status.posix_stream_flush_error = log_->take_flush_error();
        status.posix_log_full_status = log_->full() ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
        if (log_->take_overrun())
            status.posix_log_overrun_status = POSIX_TRACE_OVERRUN;
    }
    overrun_ = false;
    return status;
}

posix_trace_counters Stream::counters() const
{
    std::lock_guard lock(mutex_);
    return counters_;
}

posix_trace_loss_counters Stream::loss_counters() const
{
    std::lock_guard lock(mutex_);
    return losses_;
}

std::vector<KernelProgram::ProgramMisses> Stream::skipped_runs() const
{
    std::lock_guard lock(mutex_);
    return kernel_ ? kernel_->recursion_misses() : std::vector<KernelProgram::ProgramMisses>{};
}

uint64_t Stream::untraced_children() const
{
    std::lock_guard lock(mutex_);
    return kernel_ ? kernel_->untraced_children() : 0;
}

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
    if (flush_completed_ < flush_requested_)
        return to_timespec(kFlushRetryNs);
    if (running_ || !pending_system_.empty() || merger_.holding())
        return to_timespec(kDrainPeriodNs);
    return std::nullopt;
}

void Stream::drain_pass_locked()
{
    uint64_t now = monotonic_now();
    LibraryThreads::refresh(library_threads_);
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
    last_pass_ns_ = now;
    ++passes_;
    if (stream_losses_due_) {
        queue_loss_events_locked({0, stream_losses_due_, 0}, merger_.last_delivered_ns());
        stream_losses_due_ = 0;
    }
    update_readable_locked();
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
        uint64_t misses = kernel_->recursion_misses_total();
        skipped = misses > misses_seen_ ? misses - misses_seen_ : 0;
        misses_seen_ = std::max(misses_seen_, misses);
        if (skipped) // they happened after the previous reading of the misses
            looked_ns = std::min(looked_ns, misses_read_ns_);
        misses_read_ns_ = last_pass_ns_;
    }
    KernelProgram::Losses counted = kernel_->losses();
    uint64_t ring_full = counted.ring_full - kernel_losses_seen_.ring_full;
    uint64_t unreported = counted.unreported_switches - kernel_losses_seen_.unreported_switches;
    kernel_losses_seen_ = counted;
    uint64_t lost = ring_full + unreported + skipped;
    if (!lost)
        return;
    losses_.ring_full += ring_full;
    losses_.switches_unreported += unreported;
    losses_.runs_skipped += skipped;
    counters_.lost_in_kernel += lost;
    overrun_ = true;
    queue_loss_events_locked({lost, 0, 0}, report_time_locked(looked_ns));
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

void Stream::count_stream_loss_locked(StreamLoss kind, uint64_t count)
{
    counters_.lost_in_stream += count;
    (kind == StreamLoss::Overwritten ? losses_.overwritten
     : kind == StreamLoss::Refused   ? losses_.refused
                                     : losses_.late) += count;
    overrun_ = true;
}

// What POSIX_TRACE_UNTIL_FULL refused in the kernel is taken as the kernel
// counts it, every pass and at each restart, so a refusal counted just after
// a restart is not missed. While the stream is full, refusals join the report
// its restart makes; otherwise they are reported like the kernel's losses, at
// the time of the previous reading (they happened after it).
void Stream::account_refusals_locked(uint64_t now_ns)
{
    uint64_t refused = kernel_->refused_while_full();
    uint64_t fresh = refused - refusals_seen_, since = refusals_read_ns_;
    refusals_seen_ = refused;
    refusals_read_ns_ = now_ns;
    if (!fresh)
        return;
    count_stream_loss_locked(StreamLoss::Refused, fresh);
    if (auto_stopped_) {
        lost_while_full_.in_stream += fresh;
        return;
    }
    queue_loss_events_locked({0, fresh, 0}, report_time_locked(since));
}

// Records dropped on their way to the stream are reported by the next
// pass, before anything younger than what was delivered.
void Stream::note_stream_loss_locked(StreamLoss kind, uint64_t count)
{
    count_stream_loss_locked(kind, count);
    stream_losses_due_ += count;
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
        header.event_id = user_events_->stream_id(pid_t(record.pid), record.event_id);
        if (header.event_id != record.event_id && filtered_locked(header.event_id))
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
    counters_.lost_in_kernel += lost.lost_in_kernel;
    losses_.switches_unreported += lost.lost_in_kernel;
    overrun_ = true;
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
// threads in this process (by them, or td_create of one) are left out.
bool Stream::about_library_thread(const pt_record &record, const uint8_t *data) const
{
    if (record.cpu == UINT16_MAX || pid_t(record.pid) != creator_pid_)
        return false;
    if (library_threads_.hides(pid_t(record.tid), record.timestamp_ns))
        return true;
    if (is_thread_event(record) && record.data_len == sizeof(pt_td_data)) {
        pt_td_data about;
        std::memcpy(&about, data, sizeof about);
        if (library_threads_.hides(about.tid, record.timestamp_ns))
            return true;
        if (record.event_id == POSIX_TRACE_TD_EVENT_FIRST + PT_TD_CREATE - 1)
            return library_threads_.hides(pid_t(about.value), record.timestamp_ns);
    }
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
        if (record.data_len >= 8) {
            uint32_t child;
            std::memcpy(&child, record.data + 4, sizeof child);
            user_events_->forked(pid, pid_t(child));
        }
        break;
    case PT_EVENT_PROCESS_EXEC:
        user_events_->execed(pid);
        probes_->refresh(pid);
        break;
    case PT_EVENT_LINK_MAP_CHANGED:
        user_events_->objects_changed(pid);
        probes_->refresh(pid);
        break;
    case PT_EVENT_PROCESS_EXIT:
        probes_->forget(pid);
        user_events_->exited(pid);
        break;
    case PT_EVENT_USER_NAME:
        if (record.data_len == sizeof(pt_user_name)) {
            pt_user_name name;
            std::memcpy(&name, record.data, sizeof name);
            user_events_->learned(
                pid, name.event_id,
                std::string(name.name, std::min<size_t>(name.length, sizeof name.name - 1)));
        }
        break;
    default:
        break;
    }
}

// Applies the stream full policy to one event on its way into the buffer.
void Stream::store_locked(const pt_record &record, const void *data)
{
    size_t bytes = stored_event_size(record.data_len);
    if (attributes_.stream_full_policy == POSIX_TRACE_FLUSH) {
        if (!buffer_->fits(bytes)) { // full: everything goes to the log
            move_to_log_locked();
            note_flush_start_locked(record.timestamp_ns);
        }
    } else if (attributes_.stream_full_policy == POSIX_TRACE_LOOP) {
        while (!buffer_->fits(bytes) && !buffer_->empty())
            drop_oldest_locked();
    } else {
        if (auto_stopped_) {
            refuse_locked(record, data);
            return;
        }
        // A stop event may take the room kept for the stop event.
        bool stop_event = record.event_id == POSIX_TRACE_STOP && record.cpu == UINT16_MAX;
        size_t room_kept = stop_event ? 0 : kStopEventBytes + kLossEventsBytes;
        if (!buffer_->fits(bytes + room_kept)) {
            auto_stop_locked(record.timestamp_ns);
            refuse_locked(record, data);
            return;
        }
    }
    if (!buffer_->fits(bytes)) { // larger than the whole stream
        count_stream_loss_locked(StreamLoss::Refused, 1);
        return;
    }
    push_locked(record, data);
    ++counters_.recorded;
}

// POSIX_TRACE_UNTIL_FULL refuses what comes while the stream is full. A
// refused loss report hands its counts on; a resume marker is no event.
// (Overflow and resume events are only ever the trace system's own: the
// kernel records no system event id for posix_trace_event().)
void Stream::refuse_locked(const pt_record &record, const void *data)
{
    if (record.event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data carried;
        std::memcpy(&carried, data, sizeof carried);
        lost_while_full_.in_kernel += carried.lost_in_kernel;
        lost_while_full_.in_stream += carried.lost_in_stream;
        return;
    }
    if (record.event_id == POSIX_TRACE_RESUME)
        return;
    ++lost_while_full_.in_stream;
    count_stream_loss_locked(StreamLoss::Refused, 1);
}

void Stream::push_locked(pt_record record, const void *data)
{
    record.timestamp_ns = uint64_t(int64_t(record.timestamp_ns) + realtime_offset_ns_);
    buffer_->push(record, data);
}

// POSIX_TRACE_LOOP: the oldest event makes room. Its loss is reported to the
// reader before the oldest surviving event; a dropped overflow event hands
// its counts on so no loss goes unreported.
void Stream::drop_oldest_locked()
{
    const pt_record &oldest = buffer_->front();
    if (oldest.event_id == POSIX_TRACE_OVERFLOW) {
        posix_trace_overflow_data carried;
        std::memcpy(&carried, oldest.data, sizeof carried);
        head_loss_.in_kernel += carried.lost_in_kernel;
        head_loss_.in_stream += carried.lost_in_stream;
    } else if (oldest.event_id != POSIX_TRACE_RESUME) {
        ++head_loss_.in_stream;
        count_stream_loss_locked(StreamLoss::Overwritten, 1);
    }
    head_loss_.timestamp_ns = oldest.timestamp_ns;
    last_dropped_ns_ = oldest.timestamp_ns;
    resume_due_ = true;
    full_ = true;
    overrun_ = true;
    buffer_->pop();
}

void Stream::auto_stop_locked(uint64_t timestamp_ns)
{
    set_kernel_state_locked(PT_STREAM_FULL);
    running_ = false;
    auto_stopped_ = true;
    full_ = true;
    overrun_ = true;
    posix_trace_stop_data cause{POSIX_TRACE_STOP_STREAM_FULL};
    if (!filtered_locked(POSIX_TRACE_STOP))
        push_locked(system_record(POSIX_TRACE_STOP, timestamp_ns, sizeof cause), &cause);
}

// POSIX_TRACE_UNTIL_FULL: once the reader has emptied a full stream it runs
// again, reporting first what it refused while full, then a start event.
// They go through the merge like every system event, so they come after
// anything queued before them.
void Stream::auto_restart_locked()
{
    uint64_t now = monotonic_now();
    account_refusals_locked(now);
    uint64_t lost = discard_recorded_locked(); // recorded before the kernel saw the stop
    lost_while_full_.in_stream += lost;
    count_stream_loss_locked(StreamLoss::Refused, lost);
    auto_stopped_ = false;
    full_ = false;
    if (lost_while_full_.any()) {
        queue_loss_events_locked(lost_while_full_, now);
        lost_while_full_ = {};
    }
    queue_system_event_locked(POSIX_TRACE_START, now, nullptr, 0);
    accept_after_ns_ = now;
    resume_running_locked();
}

// An UNTIL_FULL stream stopped by the user while it stopped itself stays
// suspended. What the kernel recorded before it saw the full state, or
// refused since, is lost: it is counted now and reported before the next
// start, and no stale record may reach the stream after it is read empty.
void Stream::cancel_auto_restart_locked()
{
    set_kernel_state_locked(PT_STREAM_SUSPENDED);
    uint64_t now = monotonic_now();
    account_refusals_locked(now);
    uint64_t lost = discard_recorded_locked();
    lost_while_full_.in_stream += lost;
    count_stream_loss_locked(StreamLoss::Refused, lost);
    accept_after_ns_ = now;
    auto_stopped_ = false;
}

// ---- reading ---------------------------------------------------------------

bool Stream::available_locked() const
{
    return shut_down_ || head_loss_.any() || resume_due_ || (buffer_ && !buffer_->empty());
}

// readable_ is a level: non-zero exactly while available_locked().
void Stream::update_readable_locked()
{
    bool available = available_locked();
    if (available == readable_signaled_)
        return;
    if (available) {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = write(readable_.get(), &one, sizeof one);
    } else {
        drain_eventfd(readable_.get());
    }
    readable_signaled_ = available;
}

void Stream::copy_out(const pt_record &record, const void *data, const EventDestination &to) const
{
    posix_trace_event_info &info = *to.info;
    info = {};
    info.posix_event_id = record.event_id;
    info.posix_pid = pid_t(record.pid);
    info.posix_prog_address = reinterpret_cast<void *>(record.prog_address);
    info.posix_thread_id = pthread_t(record.thread_id);
    info.posix_timestamp = to_timespec(record.timestamp_ns);
    info.posix_tid = pid_t(record.tid);
    info.posix_truncation_status = record.flags & PT_RECORD_TRUNCATED ? POSIX_TRACE_TRUNCATED_RECORD
                                                                      : POSIX_TRACE_NOT_TRUNCATED;
    size_t length = record.data_len;
    if (to.capacity < length) {
        length = to.capacity;
        info.posix_truncation_status = POSIX_TRACE_TRUNCATED_READ;
    }
    if (length && to.data)
        std::memcpy(to.data, data, length);
    *to.data_len = to.data ? length : 0;
}

// POSIX_TRACE_LOOP's report of what it overwrote, due before the oldest
// event left: the overflow event, then the resume event (each unless
// filtered). False when none is due.
bool Stream::take_loss_report_locked(pt_record &record, posix_trace_overflow_data &loss)
{
    if (head_loss_.any()) {
        loss = {head_loss_.in_kernel + head_loss_.in_stream, head_loss_.in_kernel,
                head_loss_.in_stream};
        record = system_record(POSIX_TRACE_OVERFLOW, head_loss_.timestamp_ns, sizeof loss);
        head_loss_ = {};
        if (!filtered_locked(POSIX_TRACE_OVERFLOW))
            return true;
    }
    if (resume_due_) {
        resume_due_ = false;
        uint64_t at = buffer_->empty() ? last_dropped_ns_ : buffer_->front().timestamp_ns;
        record = system_record(POSIX_TRACE_RESUME, at, 0);
        if (!filtered_locked(POSIX_TRACE_RESUME))
            return true;
    }
    return false;
}

int Stream::read_locked(const EventDestination &to)
{
    pt_record report;
    posix_trace_overflow_data loss;
    if (take_loss_report_locked(report, loss)) {
        copy_out(report, &loss, to); // a resume event's data_len is 0
        return 0;
    }
    if (buffer_->empty())
        return EAGAIN;
    const pt_record &record = buffer_->front();
    copy_out(record, record.data, to);
    buffer_->pop();
    if (buffer_->empty() && auto_stopped_)
        auto_restart_locked();
    else if (buffer_->empty() || attributes_.stream_full_policy == POSIX_TRACE_LOOP)
        full_ = false; // read empty (or, under LOOP, room made): no longer full
    return 0;
}

int Stream::next_event(const EventDestination &to, int *unavailable, WaitMode mode,
                       const timespec *abstime)
{
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (shut_down_)
                return EINVAL;
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

// ---- event types -----------------------------------------------------------

int Stream::attach_usdt(const std::string &spec, size_t &attached)
{
    std::lock_guard lock(mutex_);
    if (shut_down_)
        return EINVAL;
    return probes_->add_usdt_spec(target_pid_, spec, attached);
}

ProbeAttacher::Unattached Stream::unattached_probes()
{
    std::lock_guard lock(mutex_);
    return probes_ ? probes_->unattached() : ProbeAttacher::Unattached{};
}

static_assert(PT_USDT_STRING_MAX == POSIX_TRACE_USDT_STRING_MAX);
static_assert(PT_USDT_MAX_SITES == POSIX_TRACE_USDT_MAX_SITES);
static_assert(PT_MAX_TRACED_PROCESSES == POSIX_TRACE_MAX_TRACED_PROCESSES);

int Stream::decode_usdt_string(const std::string &probe, unsigned index)
{
    std::lock_guard lock(mutex_);
    if (shut_down_ || index >= PT_USDT_MAX_ARGS)
        return EINVAL;
    auto id = probes_->usdt_id(probe);
    if (!id)
        return ENOENT;
    kernel_->set_usdt_string_argument(*id, index);
    return 0;
}

bool Stream::control_thread_events(const std::function<void(KernelProgram &)> &change)
{
    std::lock_guard lock(mutex_);
    if (shut_down_)
        return false;
    change(*kernel_);
    return true;
}

int Stream::set_thread_agent(pid_t pid, bool present)
{
    std::lock_guard lock(mutex_);
    if (present)
        thread_agents_.insert(pid);
    else
        thread_agents_.erase(pid);
    if (shut_down_)
        return 0;
    int err = select_thread_event_programs_locked();
    if (err && present) // an agent whose events cannot all be produced is refused
        thread_agents_.erase(pid);
    return err;
}

// The thread event types the stream may record: those its filter lets
// through, and all of them while an agent may ask for any.
int Stream::select_thread_event_programs_locked()
{
    uint32_t wanted = 0;
    for (unsigned i = 0; i < POSIX_TRACE_TD_EVENT_COUNT; ++i)
        if (!thread_agents_.empty() || !filtered_locked(POSIX_TRACE_TD_EVENT_FIRST + i))
            wanted |= 1u << i;
    return kernel_->select_thread_event_programs(wanted);
}

std::optional<std::string> Stream::event_name(trace_event_id_t id) const
{
    std::lock_guard lock(mutex_);
    return event_name_locked(id);
}

std::optional<std::string> Stream::event_name_locked(trace_event_id_t id) const
{
    if (auto builtin = builtin_event_name(id))
        return std::string(*builtin);
    if (id >= POSIX_TRACE_USDT_EVENT_FIRST)
        return probes_ ? probes_->usdt_name(id) : std::nullopt;
    return user_events_->name_of(id);
}

int Stream::open_event_type(const char *name, trace_event_id_t &id)
{
    std::lock_guard lock(mutex_);
    return user_events_->open(name, id);
}

void Stream::next_event_type(trace_event_id_t &id, int &unavailable)
{
    std::vector<trace_event_id_t> ids = builtin_event_ids();
    std::lock_guard lock(mutex_);
    auto user = user_events_->ids();
    ids.insert(ids.end(), user.begin(), user.end());
    for (size_t i = 0; probes_ && i < probes_->usdt_type_count(); ++i)
        ids.push_back(POSIX_TRACE_USDT_EVENT_FIRST + trace_event_id_t(i));
    auto next =
        type_cursor_ ? std::upper_bound(ids.begin(), ids.end(), *type_cursor_) : ids.begin();
    if (next == ids.end()) {
        unavailable = 1;
        return;
    }
    id = *next;
    type_cursor_ = id;
    unavailable = 0;
}

void Stream::rewind_event_types()
{
    std::lock_guard lock(mutex_);
    type_cursor_.reset();
}

} // namespace posixtrace
