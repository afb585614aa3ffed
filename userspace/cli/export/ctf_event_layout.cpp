#include "ctf_event_layout.hpp"

#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>

#include <cstddef>
#include <cstring>

#include "../event_format.hpp"

namespace posixtrace::cli {
namespace {

using Type = CtfFieldType;

// td_event_data (48 bytes): where its members are.
constexpr size_t kTdValue = offsetof(td_event_data, value);
constexpr size_t kTdValue2 = offsetof(td_event_data, value2);

// What the two values of each TD event mean (<posix_trace/thread_db.h>).
CtfPayloadLayout thread_event_values(td_event_e event)
{
    switch (event) {
    case TD_READY:
        return {{"waker", Type::int32, kTdValue}, {"target_cpu", Type::uint32, kTdValue2}};
    case TD_SLEEP:
    case TD_SWITCHFROM:
        return {{"state", Type::uint32, kTdValue}, {"next", Type::int32, kTdValue2}};
    case TD_SWITCHTO:
        return {{"previous", Type::int32, kTdValue}};
    case TD_PREEMPT:
        return {{"next", Type::int32, kTdValue2}};
    case TD_LOCK_TRY:
        return {{"futex", Type::hex64, kTdValue}, {"op", Type::uint32, kTdValue2}};
    case TD_TIMEOUT:
        return {{"futex", Type::hex64, kTdValue}};
    case TD_CATCHSIG:
        return {{"signal", Type::int32, kTdValue}, {"si_code", Type::int32, kTdValue2}};
    case TD_CREATE:
        return {{"new_thread", Type::int32, kTdValue}, {"new_pthread", Type::hex64, kTdValue2}};
    case TD_DEATH:
        return {{"wait_status", Type::int32, kTdValue}};
    case TD_PRI_INHERIT:
        return {{"priority", Type::int32, kTdValue}, {"kernel_priority", Type::int32, kTdValue2}};
    case TD_CONCURRENCY:
        return {{"threads", Type::uint32, kTdValue}};
    default: // td_idle (its value is the CPU again), td_reap
        return {};
    }
}

CtfPayloadLayout thread_event_layout(td_event_e event)
{
    CtfPayloadLayout layout = {{"thread", Type::int32, offsetof(td_event_data, tid)},
                               {"cpu", Type::uint32, offsetof(td_event_data, cpu)},
                               {"pthread_id", Type::hex64, offsetof(td_event_data, pthread_id)}};
    for (const CtfField &field : thread_event_values(event))
        layout.push_back(field);
    layout.push_back({"name", Type::text16, offsetof(td_event_data, name)});
    return layout;
}

const char *tsdl_type(Type type)
{
    switch (type) {
    case Type::int32:
        return "int32_t";
    case Type::uint32:
        return "uint32_t";
    case Type::uint64:
        return "uint64_t";
    case Type::hex64:
        return "hex64_t";
    default:
        return "";
    }
}

size_t fixed_size(Type type)
{
    switch (type) {
    case Type::int32:
    case Type::uint32:
        return 4;
    case Type::uint64:
    case Type::hex64:
        return 8;
    case Type::text16:
        return 16;
    default:
        return 0;
    }
}

// `size` bytes of the data at `offset`, zeros where the data ends first.
void put_data_bytes(const unsigned char *data, size_t length, size_t offset, size_t size,
                    ByteBuffer &out)
{
    size_t available = offset < length ? std::min(size, length - offset) : 0;
    out.put_bytes(data + offset, available);
    out.put_zeros(size - available);
}

void put_text16(const unsigned char *data, size_t length, size_t offset, ByteBuffer &out)
{
    unsigned char text[16] = {};
    size_t available = offset < length ? std::min(sizeof text, length - offset) : 0;
    std::memcpy(text, data + offset, available);
    // Nothing after the first NUL: the reader shows the name alone.
    size_t end = strnlen(reinterpret_cast<const char *>(text), sizeof text);
    std::memset(text + end, 0, sizeof text - end);
    out.put_bytes(text, sizeof text);
}

void put_cstring(const unsigned char *data, size_t length, size_t offset, ByteBuffer &out)
{
    size_t available = offset < length ? length - offset : 0;
    const char *text = reinterpret_cast<const char *>(data + offset);
    out.put_bytes(text, strnlen(text, available));
    out.put<uint8_t>(0);
}

} // namespace

CtfPayloadLayout ctf_payload_layout(trace_event_id_t id)
{
    switch (id) {
    case POSIX_TRACE_STOP:
        return {{"cause", Type::uint32, offsetof(posix_trace_stop_data, cause)}};
    case POSIX_TRACE_OVERFLOW:
        return {
            {"lost", Type::uint64, offsetof(posix_trace_overflow_data, lost)},
            {"lost_in_kernel", Type::uint64, offsetof(posix_trace_overflow_data, lost_in_kernel)},
            {"lost_in_stream", Type::uint64, offsetof(posix_trace_overflow_data, lost_in_stream)}};
    case POSIX_TRACE_PROCESS_FORK:
        return {{"parent_pid", Type::int32, offsetof(posix_trace_process_fork_data, parent_pid)},
                {"child_pid", Type::int32, offsetof(posix_trace_process_fork_data, child_pid)},
                {"inherited", Type::uint32, offsetof(posix_trace_process_fork_data, inherited)}};
    case POSIX_TRACE_PROCESS_EXEC:
        return {{"exec_pid", Type::int32, offsetof(posix_trace_process_exec_data, pid)},
                {"former_tid", Type::int32, offsetof(posix_trace_process_exec_data, former_tid)},
                {"path", Type::cstring, offsetof(posix_trace_process_exec_data, path)}};
    case POSIX_TRACE_PROCESS_EXIT:
        return {{"exit_pid", Type::int32, offsetof(posix_trace_process_exit_data, pid)},
                {"wait_status", Type::int32, offsetof(posix_trace_process_exit_data, wait_status)}};
    default:
        break;
    }
    if (auto td = thread_event_of(id))
        return thread_event_layout(*td);
    if (id >= POSIX_TRACE_USDT_EVENT_FIRST)
        return {{"args", Type::int64_sequence}};
    return {{"data", Type::byte_sequence}}; // user events, the other system events
}

std::string ctf_payload_declarations(const CtfPayloadLayout &layout, const std::string &indent)
{
    std::string text;
    for (const CtfField &field : layout) {
        std::string name = field.name;
        switch (field.type) {
        case Type::text16:
            text += indent + "char_t " + name + "[16];\n";
            break;
        case Type::cstring:
            text += indent + "string " + name + ";\n";
            break;
        case Type::byte_sequence:
            text += indent + "uint32_t " + name + "_length;\n";
            text += indent + "uint8_t " + name + "[" + name + "_length];\n";
            break;
        case Type::int64_sequence:
            text += indent + "uint32_t " + name + "_count;\n";
            text += indent + "int64_t " + name + "[" + name + "_count];\n";
            break;
        default:
            text += indent + tsdl_type(field.type) + " " + name + ";\n";
            break;
        }
    }
    return text;
}

void encode_ctf_payload(const CtfPayloadLayout &layout, const unsigned char *data, size_t length,
                        ByteBuffer &out)
{
    for (const CtfField &field : layout) {
        switch (field.type) {
        case Type::text16:
            put_text16(data, length, field.offset, out);
            break;
        case Type::cstring:
            put_cstring(data, length, field.offset, out);
            break;
        case Type::byte_sequence:
            out.put<uint32_t>(uint32_t(length));
            out.put_bytes(data, length);
            break;
        case Type::int64_sequence: // whole arguments only, as `dump` prints them
            out.put<uint32_t>(uint32_t(length / 8));
            out.put_bytes(data, length / 8 * 8);
            break;
        default: // the data is little-endian, as the metadata declares
            put_data_bytes(data, length, field.offset, fixed_size(field.type), out);
            break;
        }
    }
}

} // namespace posixtrace::cli
