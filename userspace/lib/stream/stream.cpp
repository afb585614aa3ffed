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
    StreamParts::Holder holder{static_cast<StreamIntake::Owner &>(*this),
                               static_cast<LogHandOff::Owner &>(*this), phase_};
    if (int err = parts_.assemble(target, attributes_, log_fd, holder))
        return err;
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
            timeout = parts_.drain->timeout();
        }
        parts_.recording.wait(timeout);
        if (stop.stop_requested())
            break;
        std::lock_guard lock(mutex_);
        if (parts_.log)
            parts_.log->note_flushes_done();
        parts_.drain->pass();
        update_readable_locked();
    }
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
    return parts_.system_events->record(id, timestamp_ns, size);
}

void Stream::set_kernel_state_locked(pt_stream_state state)
{
    parts_.recording.set_state(state);
    if (parts_.drain)
        parts_.drain->note_recording_state(state, monotonic_now());
}

// The drain thread sleeps without a timeout while the stream is suspended:
// it must be woken to go back to its periodic drain.
void Stream::resume_running_locked()
{
    phase_ = StreamPhase::Running;
    set_kernel_state_locked(PT_STREAM_RUNNING);
    parts_.recording.wake();
}

void Stream::flush_locked(std::unique_lock<TrackedMutex> &lock, uint64_t until_ns)
{
    parts_.drain->flush(lock, until_ns, [this] { return shut_down(); });
}

int Stream::start()
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    if (running() || parts_.store->full())
        return 0; // POSIX: no event, no change
    uint64_t now = monotonic_now();
    if (LossReport refused = parts_.store->take_refused(); refused.any())
        parts_.drain->queue_loss(refused, now);
    parts_.drain->queue_system_event(POSIX_TRACE_START, now, nullptr, 0);
    parts_.drain->note_started(now);
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
    parts_.drain->queue_system_event(POSIX_TRACE_STOP, now, &cause, sizeof cause);
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
    SourceLosses counted = parts_.recording.losses();
    uint64_t misses = parts_.recording.kernel().recursion_misses_total();
    parts_.drain->discard_recorded();
    uint64_t now = monotonic_now();
    parts_.pipeline->cut_offs().clear_before(now);
    parts_.pipeline->hidden_wakeups().distrust_until(now);
    parts_.pipeline->hidden_wakeups().forget_all();
    parts_.system_events->clear();
    parts_.store->clear();
    parts_.ledger.clear(counted, misses, now);
    if (parts_.log)
        parts_.log->clear();
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
        if (parts_.log && drain_thread_.joinable()) { // as posix_trace_stop, then a last flush
            // Earlier flushes end first, so that their flush-stop events
            // precede the stop event and reach the log (close() would wait
            // for their blocks anyway).
            wait_for_flushes_locked(lock);
            parts_.log->note_flushes_done();
            bool was_running = running();
            stop_locked(lock); // drains the rings when it stops a running stream
            if (!was_running)
                flush_locked(lock, monotonic_now());
            parts_.log->move_all();
            final_state = parts_.log->final_state();
        }
        if (parts_.recording.has_kernel())
            set_kernel_state_locked(PT_STREAM_SUSPENDED);
        phase_ = StreamPhase::ShutDown;
        update_readable_locked();
    }
    if (parts_.drain)
        parts_.drain->wake_flushes();
    if (drain_thread_.joinable()) {
        drain_thread_.request_stop();
        parts_.recording.wake();
        drain_thread_.join();
    }
    std::lock_guard lock(mutex_);
    parts_.recording.close(owned_by_this_process());
    parts_.intake.reset();
    parts_.store.reset();
    if (parts_.system_events)
        parts_.system_events->clear();
    int err = parts_.log && final_state ? parts_.log->close(*final_state) : 0;
    parts_.log.reset();
    parts_.slot.release(); // another thread may still hold the object a while
    return err;
}

} // namespace posixtrace
