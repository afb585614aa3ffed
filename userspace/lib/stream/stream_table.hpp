#pragma once
#include <trace.h>

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "stream/stream.hpp"

namespace posixtrace {

// Maps trace ids to the streams this process created. Ids are never reused,
// so a stale id can never reach another stream. The table outlives static
// destruction (a forked child inherits a copy whose drain threads do not
// exist and must never be joined); live streams are shut down at exit.
class StreamTable {
public:
    static StreamTable &instance();

    trace_id_t add(std::shared_ptr<Stream> stream);
    // The stream, or nullptr for an unknown id or one from the parent of a fork.
    std::shared_ptr<Stream> find(trace_id_t id) const;
    std::shared_ptr<Stream> remove(trace_id_t id);
    void shutdown_all();
    void flush_logs_before_exec();

private:
    std::vector<std::shared_ptr<Stream>> owned(bool remove);

    mutable std::mutex mutex_;
    // The process that last added a stream: a forked child that owns none
    // can exec without taking mutex_, which a thread of its parent may have
    // held at the fork.
    std::atomic<pid_t> adding_process_{0};
    std::map<trace_id_t, std::shared_ptr<Stream>> streams_;
};

} // namespace posixtrace
