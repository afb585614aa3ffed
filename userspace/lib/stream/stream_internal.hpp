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

// Rings are drained this often while the stream runs; the BPF side wakes the
// drain thread earlier when a ring passes a quarter full.
inline constexpr uint64_t kDrainPeriodNs = 1'000'000;
// After this many passes in a row found nothing new, the drain sleeps for
// kDozingPeriodNs instead: a thousand idle lanes cost a look each a pass.
// Writers wake it as soon as a burst fills a lane's chunk
// (RecordSource::doze), and the rings as they fill.
inline constexpr uint64_t kQuietPassesBeforeDozing = 16;
inline constexpr uint64_t kDozingPeriodNs = 5'000'000;
// A flush waits for the merge's safe point to pass its time: passes this
// far apart until it does.
inline constexpr uint64_t kFlushRetryNs = 50'000;
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

inline void drain_eventfd(int fd)
{
    uint64_t value;
    while (read(fd, &value, sizeof value) == sizeof value) {
    }
}

} // namespace posixtrace::stream_detail
