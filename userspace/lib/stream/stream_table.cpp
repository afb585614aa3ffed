#include "stream/stream_table.hpp"

#include "util/immortal.hpp"
#include "util/trace_ids.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace posixtrace {
namespace {

// What logs_to_write_before_exec() reads, set under the table's lock: the
// process that last changed the table, and how many of its streams have a
// log. A forked child counts none of its parent's until it adds its own.
constinit std::atomic<pid_t> logs_counted_for{0};
constinit std::atomic<size_t> logs_counted{0};

} // namespace

StreamTable &StreamTable::instance()
{
    static Immortal<StreamTable> table;
    static const bool shut_down_at_exit =
        std::atexit([] { StreamTable::instance().shutdown_all(); }) == 0;
    (void)shut_down_at_exit;
    return table.get();
}

trace_id_t StreamTable::add(std::shared_ptr<Stream> stream, bool with_log)
{
    std::lock_guard lock(mutex_);
    trace_id_t id = new_trace_id();
    streams_.emplace(id, std::move(stream));
    if (with_log)
        with_log_.insert(id);
    changed_locked();
    return id;
}

// After every change of the table: a new version, the logs counted again.
void StreamTable::changed_locked()
{
    version_.fetch_add(1, std::memory_order_release);
    size_t owned_logs = 0;
    for (trace_id_t id : with_log_)
        owned_logs += streams_.at(id)->owned_by_this_process();
    logs_counted = owned_logs;
    logs_counted_for = getpid();
}

bool StreamTable::logs_to_write_before_exec()
{
    return logs_counted_for == getpid() && logs_counted > 0;
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
    with_log_.erase(id);
    changed_locked();
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
            with_log_.erase(it->first);
            it = streams_.erase(it);
        } else {
            found.push_back((it++)->second);
        }
    }
    if (remove)
        changed_locked();
    return found;
}

void StreamTable::flush_logs_before_exec()
{
    if (!logs_to_write_before_exec())
        return; // a forked child takes no lock its parent's threads may have held
    for (auto &stream : owned(false))
        stream->flush_log_before_exec();
}

void StreamTable::shutdown_all()
{
    for (auto &stream : owned(true))
        stream->shutdown();
}

} // namespace posixtrace
