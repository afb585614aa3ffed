#pragma once
#include <trace.h>

#include <cstdint>
#include <mutex>

#include "stream/stream_parts.hpp"
#include "util/tracked_mutex.hpp"

namespace posixtrace {

// The phase of a stream and every change of it: the calls that start, stop
// and clear it or change its filter, and the stops and restarts its full
// policies make (an UNTIL_FULL stream that filled, then was read empty; a
// log that filled). The kernel's state and filter follow. Used under the stream's lock, which
// a stop lets go while it waits for the rings to be drained.
class StreamControls final : public LogHandOff::Owner, public StreamIntake::Owner {
public:
    explicit StreamControls(StreamParts &parts) : parts_(parts) {}
    StreamControls(const StreamControls &) = delete;
    StreamControls &operator=(const StreamControls &) = delete;

    const StreamPhase &phase() const { return phase_; }
    bool running() const { return phase_ == StreamPhase::Running; }
    bool shut_down() const { return phase_ == StreamPhase::ShutDown; }

    void start();
    // Whatever the kernel recorded before the stop is in the stream after it.
    void stop(std::unique_lock<TrackedMutex> &lock);
    void clear();
    // posix_trace_set_filter: 0, EINVAL, or the kernel's error (the filter
    // unchanged).
    int set_filter(const trace_event_set_t &set, int how);
    void shut_down_now();
    // What the kernel recorded until `until_ns` is in the stream.
    void flush(std::unique_lock<TrackedMutex> &lock, uint64_t until_ns);
    // posix_trace_flush: starts copying the stream into its log. 0,
    // EINVAL (shut down meanwhile) or the log's first error.
    int flush_log(std::unique_lock<TrackedMutex> &lock);
    // Everything recorded until now is written to the log, and waited for.
    void flush_log_before_exec(std::unique_lock<TrackedMutex> &lock);
    // Until the log writer has written every block handed to it.
    void wait_for_log_writes(std::unique_lock<TrackedMutex> &lock);
    // The overrun status is cleared as it is read.
    posix_trace_status_info status();
    // An event was read, or the stream was flushed to its log: a stream its
    // UNTIL_FULL policy stopped runs again once it is empty.
    void after_read();
    void after_flush_to_log();

    // LogHandOff::Owner
    void stop_for_full_log() override;
    // StreamIntake::Owner
    void stop_recording_while_full() override;
    void flush_to_log(uint64_t timestamp_ns) override;
    pt_record system_record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const override;

private:
    void set_kernel_state(pt_stream_state state);
    void resume_running();
    void auto_restart();
    void cancel_auto_restart();
    void count_refused_recorded(uint64_t now_ns);

    StreamParts &parts_;
    StreamPhase phase_ = StreamPhase::Suspended;
};

} // namespace posixtrace
