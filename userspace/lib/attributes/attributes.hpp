#pragma once
#include <trace.h>

#include <cstddef>
#include <cstdint>

namespace posixtrace {

inline constexpr size_t kDefaultStreamSize = 8u << 20;
inline constexpr size_t kMinStreamSize = 4096;
inline constexpr size_t kMaxStreamSize = size_t(1) << 30;
inline constexpr size_t kDefaultMaxDataSize = 1024;
inline constexpr size_t kDefaultLogSize = 64u << 20;
inline constexpr size_t kMinLogSize = 4096;
inline constexpr char kGenerationVersion[] = "posixtrace " POSIXTRACE_VERSION;

// The attributes of a trace stream, as stored inside the opaque trace_attr_t.
struct Attributes {
    uint32_t magic;
    int inheritance;
    int stream_full_policy;
    // False until the user sets the stream full policy: the default then
    // depends on the stream, LOOP without a log and FLUSH with one (POSIX).
    bool stream_full_policy_chosen;
    int log_full_policy;
    size_t stream_size;
    size_t max_data_size;
    size_t log_size;
    timespec create_time;
    char name[TRACE_NAME_MAX];

    static Attributes defaults();
    // The attributes a stream is created with: the defaults that depend on
    // whether it has a log settled.
    Attributes for_stream(bool with_log) const;

    int set_name(const char *name);
    int set_inheritance(int policy);
    int set_stream_full_policy(int policy);
    int set_log_full_policy(int policy);
    int set_stream_size(size_t size);
    int set_max_data_size(size_t size);
    int set_log_size(size_t size);
};

static_assert(sizeof(Attributes) <= sizeof(trace_attr_t));

// The Attributes inside an initialised trace_attr_t; nullptr for a null,
// never-initialised or destroyed object.
Attributes *attributes_of(trace_attr_t *attr);
const Attributes *attributes_of(const trace_attr_t *attr);
void store_attributes(trace_attr_t *attr, const Attributes &value);
void erase_attributes(trace_attr_t *attr);

// Bytes one event occupies in a per-CPU ring and in the stream: the ring's
// 8-byte header, the record header and the payload, padded to 8.
size_t stored_event_size(size_t payload);
size_t max_user_event_size(const Attributes &attributes, size_t data_len);
size_t max_system_event_size();

timespec clock_resolution();

} // namespace posixtrace
