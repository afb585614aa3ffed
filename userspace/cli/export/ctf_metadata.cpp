#include "ctf_metadata.hpp"

#include <cstdio>

#include "../safe_text.hpp"

namespace posixtrace::cli {
namespace {

// Every integer is byte-aligned: fields follow each other with no padding,
// as ctf_event_layout and ctf_stream_file write them.
const char *const kTypes = R"(typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 64; align = 8; signed = true; } := int64_t;
typealias integer { size = 64; align = 8; signed = false; base = 16; } := hex64_t;

trace {
    major = 1;
    minor = 8;
    byte_order = le;
    packet.header := struct {
        uint32_t magic;
        uint32_t stream_id;
    };
};
)";

const char *const kStream = R"(
typealias integer { size = 64; align = 8; signed = false; map = clock.realtime.value; } := realtime_t;

stream {
    id = 0;
    packet.context := struct {
        realtime_t timestamp_begin;
        realtime_t timestamp_end;
        uint64_t content_size;
        uint64_t packet_size;
    };
    event.header := struct {
        uint32_t id;
        realtime_t timestamp;
    };
    event.context := struct {
        int32_t pid;
        int32_t tid;
    };
};
)";

// A TSDL string literal (C escapes).
std::string quoted(const std::string &text) { return '"' + c_escaped(text, '"') + '"'; }

std::string environment_declaration(const LogDescription &description)
{
    int64_t created_ns = int64_t(description.creation_time.tv_sec) * 1'000'000'000 +
                         description.creation_time.tv_nsec;
    std::string text = "\nenv {\n";
    text += "    domain = \"posixtrace\";\n";
    text += "    tracer_name = \"posixtrace\";\n";
    text += "    trace_name = " + quoted(description.trace_name) + ";\n";
    text += "    generation_version = " + quoted(description.generation_version) + ";\n";
    text += "    creation_time_ns = " + std::to_string(created_ns) + ";\n";
    return text + "};\n";
}

std::string clock_declaration(const LogDescription &description)
{
    std::string text = "\nclock {\n";
    text += "    name = realtime;\n";
    text += "    description = \"CLOCK_REALTIME\";\n";
    text += "    freq = 1000000000;\n";
    text += "    precision = " + std::to_string(description.clock_resolution_ns) + ";\n";
    text += "    offset_s = 0;\n";
    text += "    offset = 0;\n";
    text += "    absolute = true;\n";
    return text + "};\n";
}

std::string event_class_declaration(trace_event_id_t id, const CtfEventClass &event)
{
    std::string text = "\nevent {\n";
    text += "    name = " + quoted(event.name) + ";\n";
    text += "    id = " + std::to_string(id) + ";\n";
    text += "    stream_id = 0;\n";
    text += "    fields := struct {\n";
    text += ctf_payload_declarations(event.layout, "        ");
    text += "    };\n";
    return text + "};\n";
}

} // namespace

std::string ctf_metadata(const LogDescription &description,
                         const std::map<trace_event_id_t, CtfEventClass> &classes)
{
    std::string text = "/* CTF 1.8 */\n\n";
    text += kTypes;
    text += environment_declaration(description);
    text += clock_declaration(description);
    text += kStream;
    for (const auto &[id, event] : classes)
        text += event_class_declaration(id, event);
    return text;
}

} // namespace posixtrace::cli
