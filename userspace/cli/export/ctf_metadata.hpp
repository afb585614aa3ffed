#pragma once
// The TSDL metadata of the CTF 1.8 traces `export --format ctf` writes.
#include <trace.h>

#include <map>
#include <string>

#include "../logged_event.hpp"
#include "ctf_event_layout.hpp"

namespace posixtrace::cli {

struct CtfEventClass {
    std::string name;
    CtfPayloadLayout layout;
};

// The binary layout the metadata declares, for the stream writer.
inline constexpr uint32_t kCtfMagic = 0xC1FC1FC1;
inline constexpr size_t kCtfPacketHeaderBytes = 4 + 4;  // magic, stream_id
inline constexpr size_t kCtfPacketContextBytes = 4 * 8; // begin, end, sizes
inline constexpr size_t kCtfEventHeaderBytes = 4 + 8;   // id, timestamp

// The whole metadata text: one stream, a nanosecond CLOCK_REALTIME clock
// (offset 0: timestamps are nanoseconds since the epoch), one event class
// per event type (its CTF id is its trace event type id).
std::string ctf_metadata(const LogDescription &description,
                         const std::map<trace_event_id_t, CtfEventClass> &classes);

} // namespace posixtrace::cli
