#pragma once
#include <trace.h>

#include <cstddef>
#include <string>

namespace posixtrace::cli {

// One event as the CLI prints it: a text line, or a JSON object per the
// contract (ts_ns, pid, tid, event, id, data_hex, truncated; args for USDT).
// `with_string`: a USDT event whose data ends with a string argument decoded
// in the kernel and the argument count (posix_trace_usdt_decode_string).
std::string format_text(const posix_trace_event_info &info, const std::string &name,
                        const unsigned char *data, size_t length, bool with_string = false);
std::string format_json(const posix_trace_event_info &info, const std::string &name,
                        const unsigned char *data, size_t length, bool with_string = false);

} // namespace posixtrace::cli
