// Stream: reading events (the getnext functions).
#include "stream/stream.hpp"

#include <poll.h>

#include <cerrno>

#include "util/clock.hpp"

namespace posixtrace {

// ---- reading ---------------------------------------------------------------

void Stream::update_readable_locked()
{
    if (parts_.reader)
        parts_.reader->update_readable(shut_down());
}

int Stream::read_locked(const EventDestination &to)
{
    switch (parts_.reader->read(to)) {
    case StoreReader::Read::Nothing:
        return EAGAIN;
    case StoreReader::Read::Report:
        return 0;
    case StoreReader::Read::Event:
        break;
    }
    controls_.after_read();
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
            if (parts_.log)
                parts_.log->read_with_getnext();
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
        pollfd readable{parts_.reader->readable_fd(), POLLIN, 0};
        if (ppoll(&readable, 1, wait_for, nullptr) < 0 && errno == EINTR) {
            *unavailable = 1;
            return EINTR;
        }
    }
}

} // namespace posixtrace
