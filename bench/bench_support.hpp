#pragma once
// What the benchmarks of this folder share.
#include <posix_trace/events.h>
#include <trace.h>

#include <chrono>
#include <cstring>

// Emits `count` events of 64 bytes (the first 8: the event's index) as fast
// as it can; the ns an event, in the emitting thread.
inline double emit_payload64(trace_event_id_t id, long count)
{
    unsigned char payload[64];
    std::memset(payload, 0xab, sizeof payload);
    auto begin = std::chrono::steady_clock::now();
    for (long i = 0; i < count; ++i) {
        std::memcpy(payload, &i, sizeof i);
        posix_trace_event(id, payload, sizeof payload);
    }
    std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - begin;
    return elapsed.count() / double(count);
}

// Only the emitted events: this process's thread events would add to them
// (and the kernel hides a few context switches, reported as lost). Returns
// posix_trace_set_filter's result. The tests use it too (test_support.hpp).
inline int filter_out_thread_events(trace_id_t trid)
{
    trace_event_set_t set;
    posix_trace_eventset_empty(&set);
    for (trace_event_id_t id = POSIX_TRACE_TD_EVENT_FIRST;
         id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT; ++id)
        posix_trace_eventset_add(id, &set);
    return posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET);
}
