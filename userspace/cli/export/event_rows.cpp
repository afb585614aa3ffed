#include "event_rows.hpp"

#include <posix_trace/thread_db.h>

#include <cstring>

#include "../event_format.hpp"
#include "../safe_text.hpp"
#include "attributes/trace_origin.hpp"

namespace posixtrace::cli {
namespace {

std::string member(const char *key, const std::string &json_value)
{
    return std::string(",\"") + key + "\":" + json_value;
}

std::string quoted(const std::string &plain_text)
{
    return "\"" + plain_text + "\"";
}

std::string origin_members(const LogDescription &description)
{
    std::string json;
    if (const auto &origin = description.origin) {
        json += member("host.name", json_string(origin->host_name));
        json += member("host.boot_id", quoted(uuid_text(origin->boot_id)));
        json += member("stream.id", quoted(uuid_text(origin->stream_id)));
    }
    return (json + member("stream.name", json_string(description.trace_name))).substr(1);
}

} // namespace

EventRows::EventRows(const LogDescription &description, Fields fields)
    : origin_members_(origin_members(description)), fields_(fields),
      has_origin_(description.origin.has_value())
{
    if (has_origin_)
        realtime_offset_ns_ = description.origin->realtime_offset_ns;
}

const char *EventRows::class_of(trace_event_id_t id)
{
    if (thread_event_of(id))
        return "td";
    if (id >= POSIX_TRACE_USDT_EVENT_FIRST)
        return "usdt";
    if (id >= POSIX_TRACE_UNNAMED_USEREVENT)
        return "user";
    return "system";
}

// A thread event names the thread it is about: that name is the thread's
// from then on, for every event of it.
void EventRows::remember_thread_name(const LoggedEvent &event)
{
    td_event_data td;
    if (!thread_event_of(event.info.posix_event_id) || event.length < sizeof td)
        return;
    std::memcpy(&td, event.data, sizeof td);
    td.name[sizeof td.name - 1] = '\0';
    thread_names_[{event.info.posix_pid, pid_t(td.tid)}] = json_string(td.name);
}

std::string EventRows::row(const LoggedEvent &event)
{
    const posix_trace_event_info &info = event.info;
    remember_thread_name(event);
    uint64_t realtime_ns = timestamp_ns(info);
    std::string line = "{" + origin_members_;
    line += member("sequence", std::to_string(sequence_++));
    line += member("time_unix_nano", std::to_string(realtime_ns));
    if (has_origin_)
        line +=
            member("time_monotonic_ns", std::to_string(int64_t(realtime_ns) - realtime_offset_ns_));
    line += member("process.pid", std::to_string(info.posix_pid));
    line += member("thread.id", std::to_string(info.posix_tid));
    auto name = thread_names_.find({info.posix_pid, info.posix_tid});
    line += member("thread.name", name == thread_names_.end() ? "\"\"" : name->second);
    line += member("event.name", json_string(event.name));
    line += member("event.class", quoted(class_of(info.posix_event_id)));
    line += member("event.id", std::to_string(info.posix_event_id));
    line += member("data_hex", quoted(hex_text(event.data, event.length)));
    line += member("truncated", quoted(truncation_name(info.posix_truncation_status)));
    line += member("lost_before", std::to_string(lost_before_));
    std::string fields = "{" + format_json_decoded_fields(info, event.data, event.length) + "}";
    line += member("fields", fields_ == Fields::Object ? fields : json_string(fields));
    posix_trace_overflow_data overflow;
    if (info.posix_event_id == POSIX_TRACE_OVERFLOW && event.length >= sizeof overflow) {
        std::memcpy(&overflow, event.data, sizeof overflow);
        lost_before_ += overflow.lost;
    }
    return line + "}";
}

} // namespace posixtrace::cli
