#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "attributes/attributes.hpp"
#include "events/readable_trace.hpp"
#include "stream/stream_controls.hpp"
#include "stream/stream_parts.hpp"
#include "stream/stream_probes.hpp"
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
    std::optional<TraceOrigin> origin() const override { return parts_.origin; }
    posix_trace_status_info report_status() override; // the overrun status is cleared
    std::optional<posix_trace_counters> counters() override;
    posix_trace_loss_counters loss_counters();
    uint64_t unwritten_events();

    // 0 with *unavailable set; EINVAL (shut down, bad abstime), ETIMEDOUT,
    // EINTR (a signal handler ran while waiting).
    int next_event(const EventDestination &to, int *unavailable, WaitMode mode,
                   const timespec *abstime) override;

    // USDT probes, thread agents, and what the programs counted.
    StreamProbes &probes() { return probes_; }

    std::optional<std::string> event_name(trace_event_id_t id) const override;
    int open_event_type(const char *name, trace_event_id_t &id);
    void next_event_type(trace_event_id_t &id, int &unavailable) override;
    void rewind_event_types() override;

private:
    bool running() const { return controls_.running(); }
    bool shut_down() const { return controls_.shut_down(); }
    int initialize(pid_t target, const Attributes &attributes, int log_fd);
    void drain_loop(std::stop_token stop);
    void update_readable_locked();
    int read_locked(const EventDestination &to);
    void account_log_failure_locked();

    mutable TrackedMutex mutex_;
    Attributes attributes_{};
    pid_t creator_pid_ = 0;
    StreamParts parts_;
    StreamControls controls_{parts_};
    StreamProbes probes_{mutex_, parts_, controls_};
    // Last: it stops before the parts it uses go.
    LibraryThreads::Thread drain_thread_;
};

} // namespace posixtrace
