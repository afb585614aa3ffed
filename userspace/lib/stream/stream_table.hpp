#pragma once
#include <trace.h>

#include <map>
#include <memory>
#include <mutex>

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

private:
    mutable std::mutex mutex_;
    std::map<trace_id_t, std::shared_ptr<Stream>> streams_;
};

} // namespace posixtrace
