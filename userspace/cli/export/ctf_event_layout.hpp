#pragma once
// How the data of each event type is laid out as a CTF event payload: one
// description drives both the TSDL declaration in the metadata and the
// encoding of every event, so the two cannot disagree.
#include <trace.h>

#include <cstddef>
#include <string>
#include <vector>

#include "byte_buffer.hpp"

namespace posixtrace::cli {

enum class CtfFieldType {
    int32,          // 4 bytes of the data at `offset`
    uint32,         // 4 bytes at `offset`
    uint64,         // 8 bytes at `offset`
    hex64,          // 8 bytes at `offset`, shown in hexadecimal (addresses)
    text16,         // a 16-byte NUL-padded name at `offset` (a thread's comm)
    cstring,        // the NUL-terminated text from `offset` to the end
    byte_sequence,  // all the data: NAME_length, then NAME as bytes
    int64_sequence, // all the data as 64-bit integers: NAME_count, then NAME
};

struct CtfField {
    const char *name;
    CtfFieldType type;
    size_t offset = 0;
};

using CtfPayloadLayout = std::vector<CtfField>;

// The layout of an event type's data: the fixed structs of
// <posix_trace/events.h> and <posix_trace/thread_db.h> field by field (the
// two values of a TD event under the names their meaning gives them), USDT
// arguments as integers, anything else as bytes.
CtfPayloadLayout ctf_payload_layout(trace_event_id_t id);

// The TSDL field declarations of the layout, one a line, each `indent`ed.
std::string ctf_payload_declarations(const CtfPayloadLayout &layout, const std::string &indent);

// Appends the payload of one event. Data shorter than a fixed layout reads
// as zeros (a truncated record), so every event decodes.
void encode_ctf_payload(const CtfPayloadLayout &layout, const unsigned char *data, size_t length,
                        ByteBuffer &out);

} // namespace posixtrace::cli
