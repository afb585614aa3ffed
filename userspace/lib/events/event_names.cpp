#include "events/event_names.hpp"

#include "events/user_event_table.hpp"
#include "util/immortal.hpp"

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
    static Immortal<const std::vector<trace_event_id_t>> ids([] { // read at exit
        std::vector<trace_event_id_t> all;
        for (trace_event_id_t id = 0; id < POSIX_TRACE_USER_EVENT_FIRST; ++id)
            if (builtin_event_name(id))
                all.push_back(id);
        return all;
    }());
    return ids.get();
}

} // namespace posixtrace
