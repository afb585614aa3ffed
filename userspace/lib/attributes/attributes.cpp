#include "attributes/attributes.hpp"

#include <posix_trace/events.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "events/namespace_ids.hpp"
#include "posixtrace.h"

namespace posixtrace {
namespace {
constexpr uint32_t kMagic = 0x50545241; // "PTRA"
}

Attributes Attributes::defaults()
{
    Attributes a{};
    a.magic = kMagic;
    a.inheritance = POSIX_TRACE_CLOSE_FOR_CHILD;
    a.stream_full_policy = POSIX_TRACE_LOOP;
    a.log_full_policy = POSIX_TRACE_LOOP;
    a.stream_size = kDefaultStreamSize;
    a.max_data_size = kDefaultMaxDataSize;
    a.log_size = kDefaultLogSize;
    return a;
}

Attributes Attributes::for_stream(bool with_log) const
{
    Attributes settled = *this;
    if (!stream_full_policy_chosen)
        settled.stream_full_policy = with_log ? POSIX_TRACE_FLUSH : POSIX_TRACE_LOOP;
    settled.stream_full_policy_chosen = true;
    return settled;
}

int Attributes::set_name(const char *value)
{
    if (!value)
        return EINVAL;
    std::strncpy(name, value, sizeof name - 1);
    name[sizeof name - 1] = '\0';
    return 0;
}

int Attributes::set_inheritance(int policy)
{
    if (policy != POSIX_TRACE_CLOSE_FOR_CHILD && policy != POSIX_TRACE_INHERITED)
        return EINVAL;
    inheritance = policy;
    return 0;
}

int Attributes::set_stream_full_policy(int policy)
{
    if (policy != POSIX_TRACE_LOOP && policy != POSIX_TRACE_UNTIL_FULL &&
        policy != POSIX_TRACE_FLUSH)
        return EINVAL;
    stream_full_policy = policy;
    stream_full_policy_chosen = true;
    return 0;
}

int Attributes::set_log_full_policy(int policy)
{
    if (policy != POSIX_TRACE_LOOP && policy != POSIX_TRACE_UNTIL_FULL &&
        policy != POSIX_TRACE_APPEND)
        return EINVAL;
    log_full_policy = policy;
    return 0;
}

int Attributes::set_stream_size(size_t size)
{
    if (size < kMinStreamSize || size > kMaxStreamSize)
        return EINVAL;
    stream_size = size;
    return 0;
}

int Attributes::set_max_data_size(size_t size)
{
    if (size > PT_DATA_SIZE_LIMIT)
        return EINVAL;
    max_data_size = size;
    return 0;
}

int Attributes::set_log_size(size_t size)
{
    if (size < kMinLogSize)
        return EINVAL;
    log_size = size;
    return 0;
}

Attributes *attributes_of(trace_attr_t *attr)
{
    auto *a = reinterpret_cast<Attributes *>(attr);
    return a && a->magic == kMagic ? a : nullptr;
}

const Attributes *attributes_of(const trace_attr_t *attr)
{
    return attributes_of(const_cast<trace_attr_t *>(attr));
}

void store_attributes(trace_attr_t *attr, const Attributes &value)
{
    std::memset(attr, 0, sizeof *attr);
    std::memcpy(static_cast<void *>(attr), &value, sizeof value);
}

void erase_attributes(trace_attr_t *attr)
{
    std::memset(attr, 0, sizeof *attr);
}

size_t stored_event_size(size_t payload)
{
    size_t bytes = PT_RING_HEADER_SIZE + PT_RECORD_HEADER_SIZE + payload;
    return (bytes + 7) & ~size_t(7);
}

// With the ids of a PID namespace the kernel may add after the data.
size_t max_user_event_size(const Attributes &attributes, size_t data_len)
{
    return stored_event_size(
        record_payload_bytes(uint32_t(std::min(data_len, attributes.max_data_size)), true));
}

size_t max_system_event_size()
{
    return stored_event_size(sizeof(posix_trace_filter_data));
}

timespec clock_resolution()
{
    timespec res{};
    clock_getres(CLOCK_MONOTONIC, &res);
    return res;
}

} // namespace posixtrace
