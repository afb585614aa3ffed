#pragma once
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <trace.h>

#include <cstddef>
#include <optional>
#include <string>

#include "safe_text.hpp"

namespace posixtrace::cli {

// One event as the CLI prints it: a text line, or a JSON object per the
// contract (ts_ns, pid, tid, event, id, data_hex, truncated; args for USDT).
// `with_string`: a USDT event whose data ends with a string argument decoded
// in the kernel and the argument count (posix_trace_usdt_decode_string).
std::string format_text(const posix_trace_event_info &info, const std::string &name,
                        const unsigned char *data, size_t length, bool with_string = false);
std::string format_json(const posix_trace_event_info &info, const std::string &name,
                        const unsigned char *data, size_t length, bool with_string = false);

// A line of format_text or format_json with the ids the event's thread has
// in its own PID namespace added (text: ns_pid=P ns_tid=T; JSON: ns_pid
// and ns_tid members); the line as it is when `ids` is null.
void add_namespace_ids(std::string &line, const posix_trace_namespace_ids *ids, bool json);

// The members of format_json's object that describe the event's data (id,
// data_hex, truncated, args, decoded fields), without braces: for formats
// that carry the time, pid, tid and name elsewhere.
std::string format_json_data_fields(const posix_trace_event_info &info, const unsigned char *data,
                                    size_t length, bool with_string = false);

// Only what format_json_data_fields decodes from the data (args, str, the
// fields of thread, process and overflow events), members without braces;
// "" when it decodes nothing.
std::string format_json_decoded_fields(const posix_trace_event_info &info,
                                       const unsigned char *data, size_t length,
                                       bool with_string = false);
// The data as lower-case hex digits, and a truncation status's name (none,
// record, read), as format_json writes them.
std::string hex_text(const unsigned char *data, size_t length);
const char *truncation_name(int truncation_status);

// The TD_* event a trace event type id is (ids 16 .. 29), if it is one.
inline std::optional<td_event_e> thread_event_of(trace_event_id_t id)
{
    td_event_e event = POSIX_TRACE_TD_EVENT_OF(id);
    if (event == TD_ALL_EVENTS)
        return std::nullopt;
    return event;
}

} // namespace posixtrace::cli
