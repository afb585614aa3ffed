#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernel/kernel_program.hpp"
#include "usdt/probe_attacher.hpp"
#include "util/tracked_mutex.hpp"

namespace posixtrace {

struct StreamParts;
class StreamControls;

// A stream's kernel side as its callers steer it beyond <trace.h>: the USDT
// probes it attaches in the traced process and the string arguments their
// records carry, the thread agents that choose its thread events, and what
// its programs counted. Each call takes the stream's lock; after a
// shutdown, each refuses or answers as documented.
class StreamProbes {
public:
    StreamProbes(TrackedMutex &mutex, StreamParts &parts, const StreamControls &controls)
        : mutex_(mutex), parts_(parts), controls_(controls)
    {
    }
    StreamProbes(const StreamProbes &) = delete;
    StreamProbes &operator=(const StreamProbes &) = delete;

    // The process whose probes are attached, once the stream is made.
    void set_target(pid_t target) { target_ = target; }

    // Attaches the USDT probes of the traced process that match `spec`
    // ("PROVIDER:NAME", "PROVIDER:*" or "*"), in every object it maps; each
    // PROVIDER:NAME is one event type however many sites it has.
    // 0, ENOENT (no such probe), ESRCH (process gone), ENOSPC (no ids left),
    // EINVAL (shut down).
    int attach_usdt(const std::string &spec, size_t &attached);
    ProbeAttacher::Unattached unattached_probes();
    // The kernel copies the string argument `index` of PROVIDER:NAME into
    // each of its records. 0, ENOENT (not attached), EINVAL (index).
    int decode_usdt_string(const std::string &probe, unsigned index);

    // Thread agents (<posix_trace/thread_db.h>) steer the kernel's TD masks
    // through this: `change` runs under the stream's lock; false once the
    // stream is shut down.
    bool control_thread_events(const std::function<void(KernelProgram &)> &change);
    // Reported thread events of `pid` call the reporting functions.
    int set_thread_agent(pid_t pid, bool present); // 0 or an errno (programs not attached)

    std::vector<KernelProgram::ProgramMisses> skipped_runs() const;
    // Children forked under POSIX_TRACE_INHERITED that the stream could not
    // follow (PT_MAX_TRACED_PROCESSES traced processes were alive).
    uint64_t untraced_children() const;

private:
    bool shut_down() const;

    TrackedMutex &mutex_;
    StreamParts &parts_;
    const StreamControls &controls_;
    pid_t target_ = 0;
};

} // namespace posixtrace
