#include "stream/stream_table.hpp"

#include "util/trace_ids.hpp"

#include <unistd.h>

#include <cstdlib>
#include <new>
#include <vector>

namespace posixtrace {

StreamTable &StreamTable::instance()
{
    alignas(StreamTable) static unsigned char storage[sizeof(StreamTable)];
    static StreamTable *table = [] {
        auto *created = ::new (storage) StreamTable;
        std::atexit([] { StreamTable::instance().shutdown_all(); });
        return created;
    }();
    return *table;
}

trace_id_t StreamTable::add(std::shared_ptr<Stream> stream)
{
    std::lock_guard lock(mutex_);
    adding_process_ = getpid();
    trace_id_t id = new_trace_id();
    streams_.emplace(id, std::move(stream));
    return id;
}

std::shared_ptr<Stream> StreamTable::find(trace_id_t id) const
{
    std::lock_guard lock(mutex_);
    auto found = streams_.find(id);
    if (found == streams_.end() || !found->second->owned_by_this_process())
        return nullptr;
    return found->second;
}

std::shared_ptr<Stream> StreamTable::remove(trace_id_t id)
{
    std::lock_guard lock(mutex_);
    auto found = streams_.find(id);
    if (found == streams_.end() || !found->second->owned_by_this_process())
        return nullptr;
    auto stream = std::move(found->second);
    streams_.erase(found);
    return stream;
}

// The streams this process owns (a forked child owns none of the table it
// inherited); taken out of the table when `remove`.
std::vector<std::shared_ptr<Stream>> StreamTable::owned(bool remove)
{
    std::vector<std::shared_ptr<Stream>> found;
    std::lock_guard lock(mutex_);
    for (auto it = streams_.begin(); it != streams_.end();) {
        if (!it->second->owned_by_this_process()) {
            ++it;
        } else if (remove) {
            found.push_back(std::move(it->second));
            it = streams_.erase(it);
        } else {
            found.push_back((it++)->second);
        }
    }
    return found;
}

void StreamTable::flush_logs_before_exec()
{
    if (adding_process_ != getpid())
        return;
    for (auto &stream : owned(false))
        stream->flush_log_before_exec();
}

void StreamTable::shutdown_all()
{
    for (auto &stream : owned(true))
        stream->shutdown();
}

} // namespace posixtrace
