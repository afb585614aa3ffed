#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace posixtrace {

// Where and when a stream was recorded: what tells its events apart from
// every other host's and stream's once they leave the machine (an
// engine that gathers a fleet's traces keys them on it), and the clock
// anchor that turns its realtime stamps back into the monotonic ones the
// kernel took.
struct TraceOrigin {
    static constexpr size_t kHostNameMax = 64; // HOST_NAME_MAX on Linux
    std::string host_name;                     // uname's nodename, in the creator's UTS namespace
    uint8_t boot_id[16] = {};
    uint8_t stream_id[16] = {}; // random: no two streams share it
    int64_t realtime_offset_ns = 0;

    // This host now, a new stream id, and `realtime_offset_ns` as the
    // stream converts with it. Nullopt when the kernel gives no random
    // bytes (a stream id that might repeat would merge two streams).
    static std::optional<TraceOrigin> of_new_stream(int64_t realtime_offset_ns);
};

// The 36-character text of a UUID's 16 bytes (8-4-4-4-12 hex digits).
std::string uuid_text(const uint8_t (&bytes)[16]);
// The bytes of that text into `into`, if it is one; else false, `into` untouched.
bool parse_uuid(const std::string &text, uint8_t (&into)[16]);

} // namespace posixtrace
