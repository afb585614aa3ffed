#pragma once
#include <time.h>

#include <cstdint>

namespace posixtrace {

inline constexpr uint64_t kNanosPerSecond = 1'000'000'000;

inline uint64_t to_nanos(const timespec &ts)
{
    return uint64_t(ts.tv_sec) * kNanosPerSecond + uint64_t(ts.tv_nsec);
}

inline timespec to_timespec(uint64_t ns)
{
    return timespec{time_t(ns / kNanosPerSecond), long(ns % kNanosPerSecond)};
}

inline uint64_t clock_nanos(clockid_t clock)
{
    timespec ts;
    clock_gettime(clock, &ts);
    return to_nanos(ts);
}

// The clock of every record's stamp.
inline uint64_t monotonic_now()
{
    return clock_nanos(CLOCK_MONOTONIC);
}

// An absolute time of the timed getnext functions.
inline bool valid_abstime(const timespec *t)
{
    return t && t->tv_nsec >= 0 && t->tv_nsec < long(kNanosPerSecond) && t->tv_sec >= 0;
}

// The kernel stamps events with CLOCK_MONOTONIC (bpf_ktime_get_ns); POSIX
// wants CLOCK_REALTIME. The offset between the two is sampled with the
// monotonic reads bracketing the realtime one, which bounds its error by the
// bracket's width (tens of nanoseconds through the vDSO).
inline int64_t realtime_minus_monotonic()
{
    uint64_t before = clock_nanos(CLOCK_MONOTONIC);
    uint64_t real = clock_nanos(CLOCK_REALTIME);
    uint64_t after = clock_nanos(CLOCK_MONOTONIC);
    return int64_t(real) - int64_t(before + (after - before) / 2);
}

} // namespace posixtrace
