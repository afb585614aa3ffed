// What the recording tests share (test_recording.cpp,
// test_recording_policies.cpp): attributes, a started stream of this
// process, and reading it one getnext call at a time.
#pragma once
#include "test_support.hpp"

#include <trace.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace recording_support {

using namespace test_support;

// A stream tracing this process with the given attributes, thread events
// filtered out, started. The guard shuts it down.
inline StreamGuard started_stream(Attr &attr)
{
    StreamGuard stream = make_stream(attr.get());
    filter_thread_events(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    return stream;
}

// One getnext call and its outcome.
struct Got {
    int err = -1;
    int unavailable = -1;
    size_t data_len = 0;
    posix_trace_event_info info{};
    std::vector<unsigned char> data; // the whole buffer handed to the call
};

inline Got try_next(trace_id_t trid, size_t num_bytes = kReadBufferBytes)
{
    Got g;
    g.data.assign(std::max<size_t>(num_bytes, 1), 0xEE);
    g.err = posix_trace_trygetnext_event(trid, &g.info, g.data.data(), num_bytes, &g.data_len,
                                         &g.unavailable);
    return g;
}

inline Got timed_next(trace_id_t trid, long long timeout_ns, size_t num_bytes = kReadBufferBytes)
{
    Got g;
    g.data.assign(std::max<size_t>(num_bytes, 1), 0xEE);
    timespec deadline = realtime_in(timeout_ns);
    g.err = posix_trace_timedgetnext_event(trid, &g.info, g.data.data(), num_bytes, &g.data_len,
                                           &g.unavailable, &deadline);
    return g;
}

// Every event available now (trygetnext until unavailable), none skipped.
inline std::vector<Event> read_everything(trace_id_t trid, size_t limit = 1000000)
{
    std::vector<Event> events;
    for (size_t i = 0; i < limit; ++i) {
        Got g = try_next(trid);
        if (g.err != 0) {
            FAIL_CHECK("posix_trace_trygetnext_event returned " << g.err);
            break;
        }
        if (g.unavailable)
            break;
        Event e;
        e.info = g.info;
        e.data.assign(g.data.begin(),
                      g.data.begin() + std::ptrdiff_t(std::min(g.data_len, g.data.size())));
        events.push_back(std::move(e));
    }
    return events;
}

template <class T> T payload_as(const std::vector<unsigned char> &bytes)
{
    T value{};
    REQUIRE(bytes.size() >= sizeof value);
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
}

} // namespace recording_support
