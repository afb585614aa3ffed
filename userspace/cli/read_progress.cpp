#include "read_progress.hpp"

#include <posix_trace/events.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace posixtrace::cli {
namespace {

constexpr uint64_t kProgressMinimumFileSize = 64ull << 20;
constexpr auto kRedrawInterval = std::chrono::milliseconds(200);
constexpr uint64_t kEventsBetweenClockReads = 4096;

// The bytes an event's record takes in the log (docs/log-format.md: a
// 48-byte header and the data padded to 8). Blocks' headers and name records
// are not counted: the fraction of the file read is a slight underestimate.
uint64_t record_bytes(size_t data_length)
{
    return 48 + ((data_length + 7) & ~size_t(7));
}

} // namespace

ReadProgress::ReadProgress(std::string path, uint64_t file_size)
    : path_(std::move(path)), file_size_(file_size),
      enabled_(file_size >= kProgressMinimumFileSize && isatty(STDERR_FILENO))
{
}

void ReadProgress::advance(size_t data_length)
{
    ++events_;
    bytes_ += record_bytes(data_length);
    if (!enabled_ || events_ % kEventsBetweenClockReads)
        return;
    auto now = Clock::now();
    if (now - drawn_at_ >= kRedrawInterval)
        draw(now);
}

void ReadProgress::draw(Clock::time_point now)
{
    double seconds = std::chrono::duration<double>(now - start_).count();
    // The LOOP policy leaves unused room in a log: never claim to be done.
    unsigned percent = unsigned(std::min<uint64_t>(99, bytes_ * 100 / file_size_));
    std::fprintf(stderr, "\r\033[Kposixtrace: %s: %llu events (%.1f M/s), about %u%%",
                 path_.c_str(), (unsigned long long)events_,
                 seconds > 0 ? events_ / seconds / 1e6 : 0.0, percent);
    std::fflush(stderr);
    shown_ = true;
    drawn_at_ = now;
}

void ReadProgress::clear()
{
    if (!shown_)
        return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
}

void ReadTally::count(const LoggedEvent &event)
{
    posix_trace_overflow_data overflow;
    if (event.info.posix_event_id == POSIX_TRACE_OVERFLOW && event.length >= sizeof overflow) {
        std::memcpy(&overflow, event.data, sizeof overflow);
        lost_ += overflow.lost;
        return;
    }
    ++events_;
}

std::string ReadTally::summary(const posix_trace_status_info &status) const
{
    std::string text = std::to_string(events_) + " events, " + std::to_string(lost_) + " lost";
    // A LOOP log that wrapped is full and overrun; an UNTIL_FULL one only full.
    if (status.posix_log_overrun_status == POSIX_TRACE_OVERRUN)
        text += "; the log wrapped: its oldest events were overwritten";
    else if (status.posix_log_full_status == POSIX_TRACE_FULL)
        text += "; the log was full: later events were not written";
    return text;
}

} // namespace posixtrace::cli
