#include "event_format.hpp"

#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>

#include <sys/wait.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

namespace posixtrace::cli {
namespace {

bool is_usdt(const posix_trace_event_info &info)
{
    return info.posix_event_id >= POSIX_TRACE_USDT_EVENT_FIRST;
}

std::string hex(const unsigned char *data, size_t length)
{
    static const char digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(2 * length);
    for (size_t i = 0; i < length; ++i) {
        text += digits[data[i] >> 4];
        text += digits[data[i] & 15];
    }
    return text;
}

std::string usdt_args(const unsigned char *data, size_t length, const char *separator)
{
    std::string text;
    for (size_t offset = 0; offset + 8 <= length; offset += 8) {
        int64_t value;
        std::memcpy(&value, data + offset, sizeof value);
        if (offset)
            text += separator;
        text += std::to_string(value);
    }
    return text;
}

const char *truncation(int status)
{
    switch (status) {
    case POSIX_TRACE_TRUNCATED_RECORD:
        return "record";
    case POSIX_TRACE_TRUNCATED_READ:
        return "read";
    default:
        return "none";
    }
}

// Splits [arguments][string NUL][count] into the arguments' length and the
// string; false when the data does not have that shape.
bool split_string(const unsigned char *data, size_t length, size_t &args_length, std::string &text)
{
    if (length < 2 || data[length - 2] != '\0')
        return false;
    args_length = size_t(data[length - 1]) * 8;
    if (args_length + 2 > length)
        return false;
    text.assign(reinterpret_cast<const char *>(data + args_length));
    return text.size() == length - args_length - 2;
}

// The decoded fields of the events the implementation defines (process
// lifecycle), as key and JSON value; none for other events.
using Fields = std::vector<std::pair<std::string, std::string>>;

template <class T> bool read_as(const unsigned char *data, size_t length, T &value)
{
    if (length < sizeof value)
        return false;
    std::memcpy(&value, data, sizeof value);
    return true;
}

std::string hex_address(uint64_t value)
{
    char text[24];
    std::snprintf(text, sizeof text, "\"%#" PRIx64 "\"", value);
    return text;
}

std::string exit_status_field(uint64_t status, std::string &key)
{
    int wait_status = int(status);
    key = WIFSIGNALED(wait_status) ? "signal" : "exit_code";
    return std::to_string(WIFSIGNALED(wait_status) ? WTERMSIG(wait_status)
                                                   : WEXITSTATUS(wait_status));
}

// td_* events: the thread's name, tid and CPU, then the event's own values
// under the names <posix_trace/thread_db.h> gives them.
void thread_event_fields(td_event_e event, const unsigned char *data, size_t length, Fields &fields)
{
    td_event_data td;
    if (!read_as(data, length, td))
        return;
    td.name[sizeof td.name - 1] = '\0';
    fields.emplace_back("thread", std::to_string(td.tid));
    fields.emplace_back("name", json_string(td.name));
    fields.emplace_back("cpu", std::to_string(td.cpu));
    auto number = [](uint64_t value) { return std::to_string(value); };
    switch (event) {
    case TD_READY:
        fields.emplace_back("waker", number(td.value));
        fields.emplace_back("target_cpu", number(td.value2));
        break;
    case TD_SLEEP:
    case TD_SWITCHFROM:
        fields.emplace_back("state", number(td.value));
        fields.emplace_back("next", number(td.value2));
        break;
    case TD_PREEMPT:
        fields.emplace_back("next", number(td.value2));
        break;
    case TD_SWITCHTO:
        fields.emplace_back("previous", number(td.value));
        break;
    case TD_LOCK_TRY:
        fields.emplace_back("futex", hex_address(td.value));
        fields.emplace_back("op", number(td.value2));
        break;
    case TD_TIMEOUT:
        fields.emplace_back("futex", hex_address(td.value));
        break;
    case TD_CATCHSIG:
        fields.emplace_back("signal", number(td.value));
        fields.emplace_back("si_code", std::to_string(int32_t(td.value2)));
        break;
    case TD_IDLE:
        break;
    case TD_CREATE:
        fields.emplace_back("new_thread", number(td.value));
        fields.emplace_back("new_pthread", hex_address(td.value2));
        break;
    case TD_DEATH: {
        std::string key;
        std::string value = exit_status_field(td.value, key);
        fields.emplace_back(key, value);
        break;
    }
    case TD_PRI_INHERIT:
        fields.emplace_back("priority", number(td.value));
        fields.emplace_back("kernel_priority", number(td.value2));
        break;
    case TD_CONCURRENCY:
        fields.emplace_back("threads", number(td.value));
        break;
    default:
        break;
    }
}

Fields decoded_fields(const posix_trace_event_info &info, const unsigned char *data, size_t length)
{
    Fields fields;
    switch (info.posix_event_id) {
    case POSIX_TRACE_OVERFLOW: {
        posix_trace_overflow_data overflow;
        if (read_as(data, length, overflow)) {
            fields.emplace_back("lost", std::to_string(overflow.lost));
            fields.emplace_back("lost_in_kernel", std::to_string(overflow.lost_in_kernel));
            fields.emplace_back("lost_in_stream", std::to_string(overflow.lost_in_stream));
        }
        break;
    }
    case POSIX_TRACE_PROCESS_FORK: {
        posix_trace_process_fork_data fork;
        if (read_as(data, length, fork)) {
            fields.emplace_back("child", std::to_string(fork.child_pid));
            fields.emplace_back("inherited", fork.inherited ? "true" : "false");
        }
        break;
    }
    case POSIX_TRACE_PROCESS_EXEC: {
        posix_trace_process_exec_data exec;
        if (read_as(data, length, exec) && length > sizeof exec && data[length - 1] == '\0')
            fields.emplace_back("path",
                                json_string(reinterpret_cast<const char *>(data + sizeof exec)));
        break;
    }
    case POSIX_TRACE_PROCESS_EXIT: {
        posix_trace_process_exit_data exit;
        if (read_as(data, length, exit)) {
            if (WIFSIGNALED(exit.wait_status))
                fields.emplace_back("signal", std::to_string(WTERMSIG(exit.wait_status)));
            else
                fields.emplace_back("exit_code", std::to_string(WEXITSTATUS(exit.wait_status)));
        }
        break;
    }
    default:
        if (auto td = thread_event_of(info.posix_event_id))
            thread_event_fields(*td, data, length, fields);
        break;
    }
    return fields;
}

uint64_t nanoseconds(const timespec &ts)
{
    return uint64_t(ts.tv_sec) * 1000000000u + ts.tv_nsec;
}

} // namespace

std::string format_text(const posix_trace_event_info &info, const std::string &name,
                        const unsigned char *data, size_t length, bool with_string)
{
    size_t args_length = length;
    std::string text;
    bool has_text = with_string && split_string(data, length, args_length, text);
    char head[128];
    std::snprintf(head, sizeof head, "%ld.%09ld %7d %7d ", long(info.posix_timestamp.tv_sec),
                  info.posix_timestamp.tv_nsec, int(info.posix_pid), int(info.posix_tid));
    std::string shown = terminal_text(name);
    shown.resize(std::max<size_t>(shown.size(), 28), ' '); // the name column
    std::string line = head + shown + ' ';
    if (is_usdt(info))
        line += "args=[" + usdt_args(data, args_length, ", ") + "]";
    if (has_text)
        line += " str=" + json_string(text);
    else if (info.posix_event_id == POSIX_TRACE_OVERFLOW &&
             length >= sizeof(posix_trace_overflow_data)) {
        posix_trace_overflow_data overflow;
        std::memcpy(&overflow, data, sizeof overflow);
        line += "lost=" + std::to_string(overflow.lost);
    } else if (Fields fields = decoded_fields(info, data, length); !fields.empty()) {
        for (size_t i = 0; i < fields.size(); ++i)
            line += (i ? " " : "") + fields[i].first + "=" + fields[i].second;
    } else if (length && !is_usdt(info))
        line += "data=" + hex(data, length);
    if (info.posix_truncation_status != POSIX_TRACE_NOT_TRUNCATED)
        line += std::string(" truncated=") + truncation(info.posix_truncation_status);
    return line;
}

void add_namespace_ids(std::string &line, const posix_trace_namespace_ids *ids, bool json)
{
    if (!ids)
        return;
    std::string pid = std::to_string(ids->pid), tid = std::to_string(ids->tid);
    if (json && !line.empty() && line.back() == '}')
        line.insert(line.size() - 1, ",\"ns_pid\":" + pid + ",\"ns_tid\":" + tid);
    else if (!json)
        line += " ns_pid=" + pid + " ns_tid=" + tid;
}

std::string format_json_decoded_fields(const posix_trace_event_info &info,
                                       const unsigned char *data, size_t length, bool with_string)
{
    size_t args_length = length;
    std::string text;
    bool has_text = with_string && split_string(data, length, args_length, text);
    std::string json;
    auto add = [&json](const std::string &key, const std::string &value) {
        json += (json.empty() ? "\"" : ",\"") + key + "\":" + value;
    };
    if (is_usdt(info))
        add("args", "[" + usdt_args(data, args_length, ",") + "]");
    if (has_text)
        add("str", json_string(text));
    for (const auto &[key, value] : decoded_fields(info, data, length))
        add(key, value);
    return json;
}

std::string hex_text(const unsigned char *data, size_t length)
{
    return hex(data, length);
}

const char *truncation_name(int truncation_status)
{
    return truncation(truncation_status);
}

std::string format_json_data_fields(const posix_trace_event_info &info, const unsigned char *data,
                                    size_t length, bool with_string)
{
    std::string json = "\"id\":" + std::to_string(info.posix_event_id) + ",\"data_hex\":\"" +
                       hex(data, length) + "\"" + ",\"truncated\":\"" +
                       truncation(info.posix_truncation_status) + "\"";
    std::string decoded = format_json_decoded_fields(info, data, length, with_string);
    return decoded.empty() ? json : json + "," + decoded;
}

std::string format_json(const posix_trace_event_info &info, const std::string &name,
                        const unsigned char *data, size_t length, bool with_string)
{
    return "{\"ts_ns\":" + std::to_string(nanoseconds(info.posix_timestamp)) +
           ",\"pid\":" + std::to_string(info.posix_pid) +
           ",\"tid\":" + std::to_string(info.posix_tid) + ",\"event\":" + json_string(name) + "," +
           format_json_data_fields(info, data, length, with_string) + "}";
}

} // namespace posixtrace::cli
