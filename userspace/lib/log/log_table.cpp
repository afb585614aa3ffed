#include "log/log_table.hpp"

#include "util/process_id.hpp"
#include "util/trace_ids.hpp"

namespace posixtrace::log {

LogTable &LogTable::instance()
{
    static LogTable table;
    return table;
}

trace_id_t LogTable::add(std::shared_ptr<LogReader> reader)
{
    std::lock_guard lock(mutex_);
    trace_id_t id = new_trace_id();
    logs_.emplace(id, Entry{std::move(reader), current_process_id()});
    return id;
}

std::shared_ptr<LogReader> LogTable::find(trace_id_t id) const
{
    std::lock_guard lock(mutex_);
    auto found = logs_.find(id);
    if (found == logs_.end() || found->second.opener != current_process_id())
        return nullptr;
    return found->second.reader;
}

std::shared_ptr<LogReader> LogTable::remove(trace_id_t id)
{
    std::lock_guard lock(mutex_);
    auto found = logs_.find(id);
    if (found == logs_.end() || found->second.opener != current_process_id())
        return nullptr;
    auto reader = std::move(found->second.reader);
    logs_.erase(found);
    return reader;
}

} // namespace posixtrace::log
