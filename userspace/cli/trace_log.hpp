#pragma once
// A trace log opened for reading through the public API (posix_trace_open
// and the getnext calls): what the dump and export commands read.
#include <trace.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "event_names_cache.hpp"
#include "logged_event.hpp"
#include "read_progress.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace::cli {

class TraceLog {
public:
    // Opens the file and the log in it; fails with a one-line message when
    // the file cannot be read or is not a trace log.
    explicit TraceLog(const std::string &path);
    // The log open on `fd` (read-only), shown as `path`.
    TraceLog(const std::string &path, UniqueFd fd);
    TraceLog(const TraceLog &) = delete;
    TraceLog &operator=(const TraceLog &) = delete;
    ~TraceLog() { posix_trace_close(trid_); }

    const std::string &path() const { return path_; }
    trace_id_t trid() const { return trid_; }
    uint64_t file_size() const { return file_size_; }
    LogDescription description() const;
    posix_trace_status_info status() const;

    // Reads the events from where reading stands to the end of the log, in
    // order, calling `visit` for each. Returns 0 at the end of the log, else
    // the error of posix_trace_getnext_event (EINVAL: a damaged block; the
    // events before it have been visited).
    int read_all(const std::function<void(const LoggedEvent &)> &visit);
    // read_all, counting the events into `tally` and showing the reading's
    // progress on a terminal (erased before it returns, or throws).
    int read_all(ReadTally &tally, const std::function<void(const LoggedEvent &)> &visit);

private:
    std::string path_;
    UniqueFd fd_;
    uint64_t file_size_;
    trace_id_t trid_;
    EventNames names_;
    std::vector<unsigned char> data_; // room for the largest event of the log
};

// The one-line message for a read_all error after `events` events.
std::string read_error_message(const std::string &path, int err, uint64_t events);

} // namespace posixtrace::cli
