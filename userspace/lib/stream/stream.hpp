#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "attributes/attributes.hpp"
#include "events/readable_trace.hpp"
#include "kernel/kernel_program.hpp"
#include "stream/stream_controls.hpp"
#include "stream/stream_parts.hpp"
#include "usdt/probe_attacher.hpp"
#include "util/library_threads.hpp"
#include "util/tracked_mutex.hpp"

namespace posixtrace {

// A trace stream, the façade of <trace.h>'s calls over its parts
// (StreamParts) and its controls (StreamControls): the lock they are used
// under, the drain thread, the readers' wait, and the hand-off to its log.
class Stream final : public ReadableTrace {
public:
    // `log_fd` >= 0: a stream with a trace log written to that descriptor.
    static int create(pid_t target, const Attributes &attributes, std::shared_ptr<Stream> &out,
                      int log_fd = -1);
    Stream() = default;
    ~Stream();
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    bool owned_by_this_process() const;

    int start();
    int stop();
    int clear();
    // With a log: what is left is flushed and the log closed; its first
    // write error (ENOSPC, EFBIG, ...) is returned, the stream gone anyway.
    int shutdown();
    // posix_trace_flush: starts copying the stream into its log. EINVAL
    // without a log; the first error of an earlier write.
    int flush();
    // Before an exec closes the stream's descriptors: everything recorded
    // until now is written to the log, and waited for.
    void flush_log_before_exec();

    int set_filter(const trace_event_set_t &set, int how);
    trace_event_set_t filter() const;
    Attributes attributes() const override;
    posix_trace_status_info report_status() override; // the overrun status is cleared
    posix_trace_counters counters();
    posix_trace_loss_counters loss_counters();
    uint64_t unwritten_events();
    std::vector<KernelProgram::ProgramMisses> skipped_runs() const;
    // Children forked under POSIX_TRACE_INHERITED that the stream could not
    // follow (PT_MAX_TRACED_PROCESSES traced processes were alive).
    uint64_t untraced_children() const;

    // 0 with *unavailable set; EINVAL (shut down, bad abstime), ETIMEDOUT,
    // EINTR (a signal handler ran while waiting).
    int next_event(const EventDestination &to, int *unavailable, WaitMode mode,
                   const timespec *abstime) override;

    // Attaches the USDT probes of the traced process that match `spec`
    // ("PROVIDER:NAME", "PROVIDER:*" or "*"), in every object it maps; each
    // PROVIDER:NAME is one event type however many sites it has.
    // 0, ENOENT (no such probe), ESRCH (process gone), ENOSPC (no ids left).
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

    std::optional<std::string> event_name(trace_event_id_t id) const override;
    int open_event_type(const char *name, trace_event_id_t &id);
    void next_event_type(trace_event_id_t &id, int &unavailable) override;
    void rewind_event_types() override;

private:
    bool running() const { return controls_.running(); }
    bool shut_down() const { return controls_.shut_down(); }
    int initialize(pid_t target, const Attributes &attributes, int log_fd);
    void wait_for_flushes_locked(std::unique_lock<TrackedMutex> &lock);
    void drain_loop(std::stop_token stop);
    void update_readable_locked();
    int read_locked(const EventDestination &to);
    void account_log_failure_locked();

    mutable TrackedMutex mutex_;
    Attributes attributes_{};
    pid_t creator_pid_ = 0;
    pid_t target_pid_ = 0;
    StreamParts parts_;
    StreamControls controls_{parts_};
    // Last: it stops before the parts it uses go.
    LibraryThreads::Thread drain_thread_;
};

} // namespace posixtrace
