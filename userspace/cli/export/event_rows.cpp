#include "event_rows.hpp"

#include <posix_trace/thread_db.h>

#include <charconv>
#include <cstring>

#include "../event_format.hpp"
#include "../safe_text.hpp"
#include "attributes/trace_origin.hpp"

namespace posixtrace::cli {
namespace {

template <class Number> void append_number(std::string &out, Number value)
{
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out.append(digits, end);
}

void append_hex(std::string &out, const unsigned char *data, size_t length)
{
    static const char digits[] = "0123456789abcdef";
    size_t at = out.size();
    out.resize(at + 2 * length);
    for (size_t i = 0; i < length; ++i) {
        out[at + 2 * i] = digits[data[i] >> 4];
        out[at + 2 * i + 1] = digits[data[i] & 15];
    }
}

// ClickHouse's TabSeparated escapes: what would end a value or a row.
std::string tab_separated(std::string_view value)
{
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        switch (c) {
        case '\\':
            out += "\\\\";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\0':
            out += "\\0";
            break;
        default:
            out += c;
        }
    }
    return out;
}

} // namespace

EventRows::EventRows(const LogDescription &description, Format format)
    : format_(format), has_origin_(description.origin.has_value()),
      stream_name_(text(description.trace_name)), unnamed_thread_(text(""))
{
    if (const auto &origin = description.origin) {
        host_ = text(origin->host_name);
        boot_id_ = text(uuid_text(origin->boot_id));
        stream_id_ = text(uuid_text(origin->stream_id));
        realtime_offset_ns_ = origin->realtime_offset_ns;
    }
    row_start_ = host_ + '\t' + boot_id_ + '\t' + stream_id_ + '\t' + stream_name_ + '\t';
}

// An event type's name keeps its text for the whole log (EventNames); a
// row a million times over is made without making it again.
const std::string &EventRows::name_text(const LoggedEvent &event)
{
    auto [known, added] = name_texts_.try_emplace(event.info.posix_event_id);
    if (added || known->second.first != event.name)
        known->second = {event.name, text(event.name)};
    return known->second.second;
}

std::string EventRows::text(std::string_view value) const
{
    return format_ == Format::JsonObject ? json_string(value) : tab_separated(valid_utf8(value));
}

const char *EventRows::tab_separated_columns()
{
    return "`host.name`, `host.boot_id`, `stream.id`, `stream.name`, sequence, time_unix_nano, "
           "time_monotonic_ns, `process.pid`, `thread.id`, `thread.name`, `event.name`, "
           "`event.class`, `event.id`, data_hex, truncated, lost_before, fields, `process.vpid`, "
           "`thread.vtid`";
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
    thread_names_[{event.info.posix_pid, pid_t(td.tid)}] = text(td.name);
}

void EventRows::append_row(const LoggedEvent &event, std::string &out)
{
    remember_thread_name(event);
    auto named = thread_names_.find({event.info.posix_pid, event.info.posix_tid});
    const std::string &thread_name = named == thread_names_.end() ? unnamed_thread_ : named->second;
    if (format_ == Format::JsonObject)
        append_json(event, thread_name, out);
    else
        append_tab_separated(event, thread_name, out);
    count_row(event);
}

void EventRows::skip_row(const LoggedEvent &event)
{
    remember_thread_name(event);
    count_row(event);
}

// The sequence and the losses reported so far move on past the event.
void EventRows::count_row(const LoggedEvent &event)
{
    ++sequence_;
    posix_trace_overflow_data overflow;
    if (event.info.posix_event_id == POSIX_TRACE_OVERFLOW && event.length >= sizeof overflow) {
        std::memcpy(&overflow, event.data, sizeof overflow);
        lost_before_ += overflow.lost;
    }
}

void EventRows::append_json(const LoggedEvent &event, const std::string &thread_name,
                            std::string &out)
{
    const posix_trace_event_info &info = event.info;
    uint64_t realtime_ns = timestamp_ns(info);
    out += '{';
    if (has_origin_)
        out += "\"host.name\":" + host_ + ",\"host.boot_id\":" + boot_id_ +
               ",\"stream.id\":" + stream_id_ + ",";
    out += "\"stream.name\":" + stream_name_ + ",\"sequence\":";
    append_number(out, sequence_);
    out += ",\"time_unix_nano\":";
    append_number(out, realtime_ns);
    if (has_origin_) {
        out += ",\"time_monotonic_ns\":";
        append_number(out, monotonic_ns(realtime_ns));
    }
    out += ",\"process.pid\":";
    append_number(out, info.posix_pid);
    out += ",\"thread.id\":";
    append_number(out, info.posix_tid);
    if (event.namespace_ids) {
        out += ",\"process.vpid\":";
        append_number(out, event.namespace_ids->pid);
        out += ",\"thread.vtid\":";
        append_number(out, event.namespace_ids->tid);
    }
    out += ",\"thread.name\":" + thread_name + ",\"event.name\":" + name_text(event);
    out += std::string(",\"event.class\":\"") + class_of(info.posix_event_id) + "\",\"event.id\":";
    append_number(out, info.posix_event_id);
    out += ",\"data_hex\":\"";
    append_hex(out, event.data, event.length);
    out += std::string("\",\"truncated\":\"") + truncation_name(info.posix_truncation_status) +
           "\",\"lost_before\":";
    append_number(out, lost_before_);
    out += ",\"fields\":{" + format_json_decoded_fields(info, event.data, event.length) + "}}\n";
}

// Wraps (two's complement) where a hostile log's stamp and offset overflow.
int64_t EventRows::monotonic_ns(uint64_t realtime_ns) const
{
    return int64_t(realtime_ns - uint64_t(realtime_offset_ns_));
}

// Without an origin the host and stream columns are empty, which the
// engine's UUID columns refuse: push does not send such a log.
void EventRows::append_tab_separated(const LoggedEvent &event, const std::string &thread_name,
                                     std::string &out)
{
    const posix_trace_event_info &info = event.info;
    uint64_t realtime_ns = timestamp_ns(info);
    out += row_start_;
    append_number(out, sequence_);
    out += '\t';
    append_number(out, realtime_ns);
    out += '\t';
    append_number(out, monotonic_ns(realtime_ns));
    out += '\t';
    append_number(out, info.posix_pid);
    out += '\t';
    append_number(out, info.posix_tid);
    out += '\t';
    out += thread_name;
    out += '\t';
    out += name_text(event);
    out += '\t';
    out += class_of(info.posix_event_id);
    out += '\t';
    append_number(out, info.posix_event_id);
    out += '\t';
    append_hex(out, event.data, event.length);
    out += '\t';
    out += truncation_name(info.posix_truncation_status);
    out += '\t';
    append_number(out, lost_before_);
    out += '\t';
    std::string fields = format_json_decoded_fields(info, event.data, event.length);
    out += fields.empty() ? "{}" : tab_separated("{" + fields + "}");
    out += '\t';
    append_number(out, event.namespace_ids ? event.namespace_ids->pid : 0);
    out += '\t';
    append_number(out, event.namespace_ids ? event.namespace_ids->tid : 0);
    out += '\n';
}

} // namespace posixtrace::cli
