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
    return format_ == Format::JsonObject ? json_string(value) : valid_utf8(value);
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

EventRow EventRows::row(const LoggedEvent &event)
{
    remember_thread_name(event);
    auto named = thread_names_.find({event.info.posix_pid, event.info.posix_tid});
    const posix_trace_event_info &info = event.info;
    uint64_t realtime_ns = timestamp_ns(info);
    EventRow row{
        .sequence = sequence_,
        .time_unix_nano = realtime_ns,
        .time_monotonic_ns = monotonic_ns(realtime_ns),
        .pid = info.posix_pid,
        .tid = info.posix_tid,
        .vpid = event.namespace_ids ? event.namespace_ids->pid : 0,
        .vtid = event.namespace_ids ? event.namespace_ids->tid : 0,
        .thread_name = named == thread_names_.end() ? unnamed_thread_ : named->second,
        .event_name = name_text(event),
        .event_class = class_of(info.posix_event_id),
        .event_id = info.posix_event_id,
        .data = {reinterpret_cast<const char *>(event.data), event.length},
        .truncated = truncation_name(info.posix_truncation_status),
        .lost_before = lost_before_,
        .fields = format_json_decoded_fields(info, event.data, event.length),
    };
    count_row(event);
    return row;
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

void EventRows::append_json_row(const LoggedEvent &event, std::string &out)
{
    bool namespaced = event.namespace_ids != nullptr;
    EventRow row = this->row(event);
    out += '{';
    if (has_origin_)
        out += "\"host.name\":" + host_ + ",\"host.boot_id\":" + boot_id_ +
               ",\"stream.id\":" + stream_id_ + ",";
    out += "\"stream.name\":" + stream_name_ + ",\"sequence\":";
    append_number(out, row.sequence);
    out += ",\"time_unix_nano\":";
    append_number(out, row.time_unix_nano);
    if (has_origin_) {
        out += ",\"time_monotonic_ns\":";
        append_number(out, row.time_monotonic_ns);
    }
    out += ",\"process.pid\":";
    append_number(out, row.pid);
    out += ",\"thread.id\":";
    append_number(out, row.tid);
    if (namespaced) {
        out += ",\"process.vpid\":";
        append_number(out, row.vpid);
        out += ",\"thread.vtid\":";
        append_number(out, row.vtid);
    }
    out += ",\"thread.name\":";
    out += row.thread_name;
    out += ",\"event.name\":";
    out += row.event_name;
    out += std::string(",\"event.class\":\"") + row.event_class + "\",\"event.id\":";
    append_number(out, row.event_id);
    out += ",\"data_hex\":\"";
    append_hex(out, reinterpret_cast<const unsigned char *>(row.data.data()), row.data.size());
    out += std::string("\",\"truncated\":\"") + row.truncated + "\",\"lost_before\":";
    append_number(out, row.lost_before);
    out += ",\"fields\":{" + row.fields + "}}\n";
}

// Wraps (two's complement) where a hostile log's stamp and offset overflow.
int64_t EventRows::monotonic_ns(uint64_t realtime_ns) const
{
    return int64_t(realtime_ns - uint64_t(realtime_offset_ns_));
}

} // namespace posixtrace::cli
