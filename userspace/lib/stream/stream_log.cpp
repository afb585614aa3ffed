// Stream: the trace log it flushes to.
#include "stream/stream.hpp"

#include <unistd.h>

#include <posix_trace/events.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "util/clock.hpp"

namespace posixtrace {

// ---- the trace log -------------------------------------------------------------

int Stream::flush()
{
    std::unique_lock lock(mutex_);
    if (shut_down() || !parts_.log)
        return EINVAL;
    if (int err = parts_.log->first_error())
        return err;
    uint64_t now = monotonic_now();
    controls_.flush(lock, now); // what the kernel recorded until now is in the stream
    if (shut_down())
        return EINVAL;
    // Its start after what it took (events stamped after `now` perhaps).
    if (!parts_.log->flush(
            std::max<uint64_t>(now, parts_.recording.merger().last_delivered_ns()))) {
        update_readable_locked(); // the log failed meanwhile: no flush started
        return parts_.log->first_error();
    }
    controls_.after_flush_to_log();
    update_readable_locked();
    return 0;
}

// A log left by an exec has no trailer: a reader takes it as a log whose
// writer stopped after its last block, and reads every event.
void Stream::flush_log_before_exec()
{
    std::unique_lock lock(mutex_);
    if (shut_down() || !parts_.log || parts_.log->first_error())
        return;
    controls_.flush(lock, monotonic_now());
    if (shut_down())
        return;
    parts_.log->move_all();
    wait_for_flushes_locked(lock);
}

// Until the log writer has written every block handed to it; the lock is let
// go meanwhile (the writer does not take it, a shutdown may).
void Stream::wait_for_flushes_locked(std::unique_lock<TrackedMutex> &lock)
{
    while (!shut_down() && parts_.log->flushes_pending()) {
        lock.unlock();
        usleep(100);
        lock.lock();
    }
}

} // namespace posixtrace
