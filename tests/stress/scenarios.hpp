// The stream configurations the stress harness runs its workload under.
#pragma once
#include <cstddef>
#include <vector>

namespace stress {

struct Scenario {
    const char *name;
    const char *what;
    int stream_full_policy; // POSIX_TRACE_LOOP, _UNTIL_FULL or _FLUSH (with a log)
    size_t stream_size;
    bool by_pid;              // the workload in another process, traced by pid
    bool emitter_events_only; // thread and process events filtered out: exact accounting
    bool slow_reader;         // the reader sleeps 1 ms every 16 events
    bool storm;               // stop/start and filter changes while recording
    bool clears;              // posix_trace_clear in the storm too
};

const std::vector<Scenario> &scenarios();

// Runs one scenario for `seconds` of emission, prints one line (and the
// violations); true when every check passed.
bool run(const Scenario &scenario, double seconds);

} // namespace stress
