#pragma once
// What the log-reading commands (dump, export) report about their reading:
// a progress line while a large log is read on a terminal, and the totals.
#include <trace.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "logged_event.hpp"

namespace posixtrace::cli {

// A self-erasing line on standard error, redrawn every 200 ms: events read,
// their rate, and about how far into the file that is. Shown only when
// standard error is a terminal and the file is large enough to take a while.
class ReadProgress {
public:
    ReadProgress(std::string path, uint64_t file_size);
    ReadProgress(const ReadProgress &) = delete;
    ReadProgress &operator=(const ReadProgress &) = delete;
    ~ReadProgress() { clear(); }

    void advance(size_t data_length); // one more event read
    void clear();                     // erases the line (before other output)

private:
    using Clock = std::chrono::steady_clock;
    void draw(Clock::time_point now);

    std::string path_;
    uint64_t file_size_;
    bool enabled_;
    bool shown_ = false;
    uint64_t events_ = 0;
    uint64_t bytes_ = 0; // the events' records in the log
    Clock::time_point start_ = Clock::now();
    Clock::time_point drawn_at_ = start_;
};

// Events and lost events read (a posix_trace_overflow event counts what it
// says was lost, not itself), and the closing summary line.
class ReadTally {
public:
    void count(const LoggedEvent &event);
    uint64_t events() const { return events_; }
    // "N events, M lost", and what the log's status says was missed.
    std::string summary(const posix_trace_status_info &status) const;

private:
    uint64_t events_ = 0;
    uint64_t lost_ = 0;
};

} // namespace posixtrace::cli
