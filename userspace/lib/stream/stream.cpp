// Stream: creation, and the controls of <trace.h> (start, stop, clear,
// shutdown).
#include "stream/stream.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "events/event_set.hpp"
#include "util/clock.hpp"
#include "util/process_id.hpp"

namespace posixtrace {

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
    system_events_.emplace(target, filters_);
    // Called under the stream's lock; the kernel side goes only at shutdown.
    user_events_ = std::make_unique<StreamUserEvents>(
        target,
        [this](pid_t pid) {
            return recording_.has_kernel() ? recording_.kernel().image_of(pid) : PT_IMAGE_NONE;
        },
        target == getpid() ? &UserEventRegistry::instance() : nullptr);
    event_types_ = std::make_unique<StreamEventTypes>(*user_events_, recording_);
    pipeline_ = std::make_unique<RecordPipeline>(creator_pid_, *user_events_, filters_);
    rescan_ = std::make_unique<ProcessRescan>(*user_events_);
    Recording::Plan plan = Recording::plan_for(target, attributes);
    // A FLUSH stream of its own process hands its lanes' chunks to its log whole.
    size_t run_bytes = plan.lanes_wanted && attributes.stream_full_policy == POSIX_TRACE_FLUSH
                           ? LaneRuns::kRunBytesAtLeast
                           : 0;
    std::unique_ptr<log::LogWriter> log_writer;
    if (log_fd >= 0) // first: a descriptor the log cannot use costs no BPF load
        if (int err = open_log(log_fd, run_bytes, log_writer))
            return err;
    if (plan.inherit && target == getpid())
        shared_names_.emplace(); // one numbering for the stream's processes

    // Every record is reserved in a ring created after this: stamped later.
    uint64_t rings_created_after_ns = monotonic_now();
    if (int err = recording_.open(plan, rings_created_after_ns))
        return err; // EPERM first: only a loaded program shows the privileges
    if (int err = SystemSlot::acquire(slot_))
        return err;
    if (recording_.reused()) // what its earlier stream left in the rings is not this one's
        pipeline_->cut_offs().clear_before(rings_created_after_ns);
    user_events_->set_primary_image(recording_.kernel().image_of(target));
    if (int err = select_thread_event_programs_locked())
        return err;

    store_ = std::make_unique<StreamStore>(attributes.stream_size, attributes.stream_full_policy);
    if (!store_->valid())
        return ENOMEM;
    full_policy_ = FullPolicy::make(attributes.stream_full_policy);
    // One offset for the stream's life: the conversion keeps the order (and
    // the intervals) of the kernel's monotonic stamps exactly.
    realtime_offset_ns_ = realtime_minus_monotonic();
    reader_.emplace(*store_, ledger_, filters_, *system_events_);
    if (!reader_->valid())
        return errno;
    intake_.emplace(*store_, *full_policy_, *pipeline_, ledger_, filters_, phase_,
                    realtime_offset_ns_, static_cast<StreamIntake::Owner &>(*this));
    drain_.emplace(StreamDrain::Parts{recording_, *pipeline_, *rescan_, *intake_, *store_, ledger_,
                                      *system_events_, filters_, phase_, nullptr},
                   rings_created_after_ns);
    if (log_writer) {
        LogHandOff::Parts parts{*store_,  ledger_,         *full_policy_,
                                *reader_, *event_types_,   *drain_,
                                merger(), *system_events_, realtime_offset_ns_};
        log_ = std::make_unique<LogHandOff>(std::move(log_writer), parts,
                                            static_cast<LogHandOff::Owner &>(*this));
        drain_->hand_runs_to(log_.get());
        if (recording_.has_lanes())
            take_lane_runs_locked();
    }
    drain_thread_ =
        LibraryThreads::start("posixtrace-drn", [this](std::stop_token stop) { drain_loop(stop); });
    return 0;
}

// The drain thread: a pass whenever the schedule or a source says so, the
// readers told after each.
void Stream::drain_loop(std::stop_token stop)
{
    while (!stop.stop_requested()) {
        std::optional<timespec> timeout;
        {
            std::lock_guard lock(mutex_);
            timeout = drain_->timeout();
        }
        recording_.wait(timeout);
        if (stop.stop_requested())
            break;
        std::lock_guard lock(mutex_);
        if (log_)
            log_->note_flushes_done();
        drain_->pass();
        update_readable_locked();
    }
}

int Stream::open_log(int log_fd, size_t run_bytes_wanted, std::unique_ptr<log::LogWriter> &out)
{
    // The writing thread wakes the drain thread when a flush is done, so the
    // flush-stop event is recorded then.
    auto progress = [this] { recording_.wake(); };
    return log::LogWriter::create(log_fd, attributes_, target_pid_, event_types_->named(),
                                  run_bytes_wanted, progress, out);
}

// Whole chunks of the lanes go to the log as runs when the stream would
// store each of their records as it came.
void Stream::take_lane_runs_locked()
{
    LaneRuns::Judge judge{
        [this](uint64_t ns) { return pipeline_->cut_offs().of(ns) == CutOffs::Verdict::Keep; },
        [this](const pt_record &record) {
            return classify(record) == RecordKind::UserEvent &&
                   pipeline_->user_ids().keeps_id(record);
        },
        [this](uint32_t id) { return event_types_->name_of(id); }};
    log_->take_runs(std::move(judge));
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

pt_record Stream::system_record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const
{
    return system_events_->record(id, timestamp_ns, size);
}

void Stream::set_kernel_state_locked(pt_stream_state state)
{
    recording_.set_state(state);
    if (drain_)
        drain_->note_recording_state(state, monotonic_now());
}

// The drain thread sleeps without a timeout while the stream is suspended:
// it must be woken to go back to its periodic drain.
void Stream::resume_running_locked()
{
    phase_ = StreamPhase::Running;
    set_kernel_state_locked(PT_STREAM_RUNNING);
    recording_.wake();
}

void Stream::flush_locked(std::unique_lock<TrackedMutex> &lock, uint64_t until_ns)
{
    drain_->flush(lock, until_ns, [this] { return shut_down(); });
}

int Stream::start()
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    if (running() || store_->full())
        return 0; // POSIX: no event, no change
    uint64_t now = monotonic_now();
    if (LossReport refused = store_->take_refused(); refused.any())
        drain_->queue_loss(refused, now);
    drain_->queue_system_event(POSIX_TRACE_START, now, nullptr, 0);
    drain_->note_started(now);
    resume_running_locked();
    return 0;
}

int Stream::stop()
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    stop_locked(lock);
    return 0;
}

void Stream::stop_locked(std::unique_lock<TrackedMutex> &lock)
{
    // An explicit stop wins over a restart: automatic, or at clear.
    if (phase_ == StreamPhase::StoppedFull)
        cancel_auto_restart_locked();
    if (phase_ != StreamPhase::Running) {
        phase_ = StreamPhase::Suspended;
        return;
    }
    // Suspended first, then stamped: a record the kernel stamps after the
    // change is discarded there, so every recorded event precedes this one.
    set_kernel_state_locked(PT_STREAM_SUSPENDED);
    phase_ = StreamPhase::Suspended;
    uint64_t now = monotonic_now();
    posix_trace_stop_data cause{POSIX_TRACE_STOP_BY_CALL};
    drain_->queue_system_event(POSIX_TRACE_STOP, now, &cause, sizeof cause);
    flush_locked(lock, now);
}

int Stream::clear()
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    // What was recorded until now is gone, and so are the losses counted
    // until now; a record stamped earlier that is still being written is
    // dropped when it comes. The cut-off is read last: nothing recorded
    // after it is discarded.
    SourceLosses counted = recording_.losses();
    uint64_t misses = recording_.kernel().recursion_misses_total();
    drain_->discard_recorded();
    uint64_t now = monotonic_now();
    pipeline_->cut_offs().clear_before(now);
    pipeline_->hidden_wakeups().distrust_until(now);
    pipeline_->hidden_wakeups().forget_all();
    system_events_->clear();
    store_->clear();
    ledger_.clear(counted, misses, now);
    if (log_)
        log_->clear();
    if (phase_ == StreamPhase::StoppedFull || phase_ == StreamPhase::StoppedLogFull)
        resume_running_locked();
    update_readable_locked();
    return 0;
}

int Stream::shutdown()
{
    std::optional<log::FinalState> final_state;
    {
        std::unique_lock lock(mutex_);
        if (shut_down())
            return 0;
        if (log_ && drain_thread_.joinable()) { // as posix_trace_stop, then a last flush
            // Earlier flushes end first, so that their flush-stop events
            // precede the stop event and reach the log (close() would wait
            // for their blocks anyway).
            wait_for_flushes_locked(lock);
            log_->note_flushes_done();
            bool was_running = running();
            stop_locked(lock); // drains the rings when it stops a running stream
            if (!was_running)
                flush_locked(lock, monotonic_now());
            log_->move_all();
            final_state = log_->final_state();
        }
        if (recording_.has_kernel())
            set_kernel_state_locked(PT_STREAM_SUSPENDED);
        phase_ = StreamPhase::ShutDown;
        update_readable_locked();
    }
    if (drain_)
        drain_->wake_flushes();
    if (drain_thread_.joinable()) {
        drain_thread_.request_stop();
        recording_.wake();
        drain_thread_.join();
    }
    std::lock_guard lock(mutex_);
    recording_.close(owned_by_this_process());
    intake_.reset();
    store_.reset();
    if (system_events_)
        system_events_->clear();
    int err = log_ && final_state ? log_->close(*final_state) : 0;
    log_.reset();
    slot_.release(); // another thread may still hold the object a while
    return err;
}

} // namespace posixtrace
