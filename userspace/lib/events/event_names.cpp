#include "events/event_names.hpp"

#include "events/user_event_table.hpp"

#include <posix_trace/events.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace posixtrace {
namespace {

constexpr std::array<std::string_view, POSIX_TRACE_SYSTEM_EVENT_COUNT> kSystemNames = {
    "posix_trace_start",    "posix_trace_stop",  "posix_trace_filter",
    "posix_trace_overflow", "posix_trace_resume", "posix_trace_error",
    "posix_trace_flush_start", "posix_trace_flush_stop"};

constexpr std::array<std::string_view, 3> kProcessNames = {"process_fork", "process_exec",
                                                          "process_exit"};

constexpr std::array<std::string_view, POSIX_TRACE_TD_EVENT_COUNT> kThreadNames = {
    "td_ready",  "td_sleep",   "td_switchto",    "td_switchfrom", "td_lock_try",
    "td_catchsig", "td_idle",  "td_create",      "td_death",      "td_preempt",
    "td_pri_inherit", "td_reap", "td_concurrency", "td_timeout"};

constexpr std::string_view kUnnamedUserEvent = "posix_trace_unnamed_userevent";

} // namespace

std::optional<std::string_view> builtin_event_name(trace_event_id_t id)
{
    if (id < kSystemNames.size())
        return kSystemNames[id];
    if (id >= POSIX_TRACE_PROCESS_FORK && id - POSIX_TRACE_PROCESS_FORK < kProcessNames.size())
        return kProcessNames[id - POSIX_TRACE_PROCESS_FORK];
    if (id >= POSIX_TRACE_TD_EVENT_FIRST && id - POSIX_TRACE_TD_EVENT_FIRST < kThreadNames.size())
        return kThreadNames[id - POSIX_TRACE_TD_EVENT_FIRST];
    if (id == POSIX_TRACE_UNNAMED_USEREVENT)
        return kUnnamedUserEvent;
    return std::nullopt;
}

const std::vector<trace_event_id_t> &builtin_event_ids()
{
    static const std::vector<trace_event_id_t> ids = [] {
        std::vector<trace_event_id_t> all;
        for (trace_event_id_t id = 0; id < POSIX_TRACE_USER_EVENT_FIRST; ++id)
            if (builtin_event_name(id))
                all.push_back(id);
        return all;
    }();
    return ids;
}

} // namespace posixtrace

extern "C" {
// Zero (in .bss) until the first registration: a reader then sees no magic.
__attribute__((visibility("default"))) pt_user_event_table posix_trace_user_event_table;
}

namespace posixtrace {

pt_user_event_table &local_user_event_table() { return ::posix_trace_user_event_table; }

UserEventRegistry &UserEventRegistry::instance()
{
    static UserEventRegistry registry;
    return registry;
}

int UserEventRegistry::open(std::string_view name, trace_event_id_t &id)
{
    if (name.size() >= TRACE_EVENT_NAME_MAX)
        return ENAMETOOLONG;
    std::lock_guard lock(mutex_);
    std::string key(name);
    if (auto found = ids_.find(key); found != ids_.end()) {
        id = found->second;
        return 0;
    }
    if (names_.size() >= TRACE_USER_EVENT_MAX) {
        id = POSIX_TRACE_UNNAMED_USEREVENT;
        return 0;
    }
    id = POSIX_TRACE_USER_EVENT_FIRST + trace_event_id_t(names_.size());
    // Published for tracers: the name first, then the count that covers it.
    pt_user_event_table &table = local_user_event_table();
    if (names_.empty()) {
        table.version = kUserEventTableVersion;
        table.capacity = TRACE_USER_EVENT_MAX;
        __atomic_store_n(&table.magic, kUserEventTableMagic, __ATOMIC_RELEASE);
    }
    std::memcpy(table.names[names_.size()], key.c_str(), key.size() + 1);
    __atomic_store_n(&table.count, uint32_t(names_.size() + 1), __ATOMIC_RELEASE);
    names_.push_back(key);
    ids_.emplace(std::move(key), id);
    return 0;
}

std::optional<std::string> UserEventRegistry::name_of(trace_event_id_t id) const
{
    std::lock_guard lock(mutex_);
    if (id < POSIX_TRACE_USER_EVENT_FIRST || id - POSIX_TRACE_USER_EVENT_FIRST >= names_.size())
        return std::nullopt;
    return names_[id - POSIX_TRACE_USER_EVENT_FIRST];
}

std::vector<trace_event_id_t> UserEventRegistry::ids() const
{
    std::lock_guard lock(mutex_);
    std::vector<trace_event_id_t> all(names_.size());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = POSIX_TRACE_USER_EVENT_FIRST + trace_event_id_t(i);
    return all;
}

} // namespace posixtrace
