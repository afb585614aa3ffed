#pragma once
// What the parts of Stream (stream*.cpp) share; not part of its interface.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <ctime>

#include "stream/stream.hpp"
#include "util/clock.hpp"

namespace posixtrace::stream_detail {

inline constexpr size_t kMinRingBytes = 256 * 1024;
inline constexpr size_t kMaxRingBytes = 64u << 20;

// The rings only carry records from the kernel to the drain, which empties
// them every millisecond: together they hold about one stream, so the
// kernel memory a stream pins does not grow with the number of CPUs.

// The lanes of a self-tracing process may hold a whole stream's worth
// between the emitting threads and the drain, in memory taken as they fill:
// however fast the threads emit, and however late the drain, they lose
// nothing the stream has room for. At least kLaneBudgetAtLeast, so that the
// newest events of a burst reach a small POSIX_TRACE_LOOP stream, which
// drops its oldest.
inline constexpr size_t kLaneBudgetAtLeast = 32u << 20;
inline size_t lane_budget_for(size_t stream_size)
{
    return std::max(stream_size, kLaneBudgetAtLeast);
}

inline size_t ring_bytes_for(size_t stream_size)
{
    size_t share = stream_size / size_t(std::max(1, libbpf_num_possible_cpus()));
    size_t bytes = kMinRingBytes;
    while (bytes < share && bytes < kMaxRingBytes)
        bytes *= 2;
    return bytes;
}

inline bool valid_abstime(const timespec *t)
{
    return t && t->tv_nsec >= 0 && t->tv_nsec < long(kNanosPerSecond) && t->tv_sec >= 0;
}

inline uint64_t monotonic_now()
{
    return clock_nanos(CLOCK_MONOTONIC);
}

} // namespace posixtrace::stream_detail
