#pragma once
#include <sys/types.h>
#include <trace.h>

#include <map>
#include <memory>
#include <mutex>

#include "log/log_reader.hpp"

namespace posixtrace::log {

// The trace logs this process opened with posix_trace_open.
class LogTable {
public:
    static LogTable &instance();

    trace_id_t add(std::shared_ptr<LogReader> reader);
    // The log, or nullptr for an unknown id or one opened by a parent process.
    std::shared_ptr<LogReader> find(trace_id_t id) const;
    std::shared_ptr<LogReader> remove(trace_id_t id);

private:
    struct Entry {
        std::shared_ptr<LogReader> reader;
        pid_t opener;
    };
    mutable std::mutex mutex_;
    std::map<trace_id_t, Entry> logs_;
};

} // namespace posixtrace::log
