#pragma once
#include <trace.h>

#include <atomic>

namespace posixtrace {

// Streams and opened logs share one id space, so an id names one of them
// and never both; ids are never reused.
inline trace_id_t new_trace_id()
{
    static std::atomic<trace_id_t> next{1};
    return next.fetch_add(1);
}

} // namespace posixtrace
