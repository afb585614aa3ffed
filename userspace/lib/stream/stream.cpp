// Stream: creation, the controls of <trace.h> (start, stop, clear,
// shutdown, flush).
#include "stream/stream.hpp"

#include <unistd.h>

#include <cerrno>
#include <utility>

#include "util/clock.hpp"
#include "util/pid_namespace.hpp"
#include "util/process_id.hpp"

namespace posixtrace {

// From a PID namespace of its own, the caller's process numbers would aim
// the kernel's programs at whichever host processes have those numbers:
// refused (EPERM: the kernel side cannot be aimed at the process named).
int Stream::create(pid_t target, const Attributes &attributes, std::shared_ptr<Stream> &out,
                   int log_fd)
{
    if (!in_initial_pid_namespace())
        return EPERM;
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
    probes_.set_target(target);
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    attributes_.create_time = now;
    StreamParts::Holder holder{controls_, controls_, controls_.phase()};
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

int Stream::start()
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    controls_.start();
    return 0;
}

int Stream::stop()
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    controls_.stop(lock);
    return 0;
}

int Stream::clear()
{
    std::unique_lock lock(mutex_);
    if (shut_down())
        return EINVAL;
    controls_.clear();
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
            controls_.wait_for_log_writes(lock);
            parts_.log->note_flushes_done();
            bool was_running = running();
            controls_.stop(lock); // drains the rings when it stops a running stream
            if (!was_running)
                controls_.flush(lock, monotonic_now());
            parts_.log->move_all();
            final_state = parts_.log->final_state();
        }
        controls_.shut_down_now();
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
    if (parts_.store) // before the lanes let their free memory go
        parts_.store->give_back_lent();
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

// ---- the trace log ---------------------------------------------------------

int Stream::flush()
{
    std::unique_lock lock(mutex_);
    if (shut_down() || !parts_.log)
        return EINVAL;
    int err = controls_.flush_log(lock);
    update_readable_locked();
    return err;
}

void Stream::flush_log_before_exec()
{
    std::unique_lock lock(mutex_);
    if (!shut_down() && parts_.log)
        controls_.flush_log_before_exec(lock);
}

} // namespace posixtrace
