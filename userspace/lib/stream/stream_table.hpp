#pragma once
#include <trace.h>

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "stream/stream.hpp"
#include "util/tracked_mutex.hpp"

namespace posixtrace {

// Maps trace ids to the streams this process created. Ids are never reused,
// so a stale id can never reach another stream. The table outlives static
// destruction (a forked child inherits a copy whose drain threads do not
// exist and must never be joined); live streams are shut down at exit.
class StreamTable {
public:
    static StreamTable &instance();

    // `with_log`: the stream writes a trace log, which an exec writes out first.
    trace_id_t add(std::shared_ptr<Stream> stream, bool with_log);
    // The stream, or nullptr for an unknown id or one from the parent of a fork.
    std::shared_ptr<Stream> find(trace_id_t id) const;
    std::shared_ptr<Stream> remove(trace_id_t id);
    // Changes whenever a stream is added or removed: what find() answered
    // stays true while it does not change (in the process that asked).
    uint64_t version() const { return version_.load(std::memory_order_acquire); }
    void shutdown_all();
    void flush_logs_before_exec();
    // Whether this process owns a stream with a log, which flush_logs_before_exec()
    // would write out. Takes no lock, needs no instance(): async-signal-safe.
    static bool logs_to_write_before_exec();

private:
    std::vector<std::shared_ptr<Stream>> owned(bool remove);
    void changed_locked();

    mutable TrackedMutex mutex_;
    std::map<trace_id_t, std::shared_ptr<Stream>> streams_;
    std::set<trace_id_t> with_log_; // streams_ that write a log
    std::atomic<uint64_t> version_{0};
};

} // namespace posixtrace
