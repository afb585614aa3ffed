#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "attributes/attributes.hpp"
#include "events/event_names.hpp"
#include "events/readable_trace.hpp"
#include "events/stream_user_events.hpp"
#include "kernel/kernel_program.hpp"
#include "log/log_writer.hpp"
#include "sources/kernel/kernel_source.hpp"
#include "sources/lanes/lane_source.hpp"
#include "stages/filter_history.hpp"
#include "stages/record_pipeline.hpp"
#include "store/loss_ledger.hpp"
#include "store/loss_placement.hpp"
#include "store/loss_reports.hpp"
#include "store/stream_store.hpp"
#include "stream/drain_schedule.hpp"
#include "stream/lane_runs.hpp"
#include "stream/log_hand_off.hpp"
#include "stream/process_rescan.hpp"
#include "stream/recording.hpp"
#include "stream/ring_merger.hpp"
#include "stream/stream_event_types.hpp"
#include "stream/stream_intake.hpp"
#include "stream/system_event_queue.hpp"
#include "stream/system_slots.hpp"
#include "usdt/probe_attacher.hpp"
#include "util/library_threads.hpp"
#include "util/tracked_mutex.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace {

// An active trace stream: the kernel program recording into per-CPU rings,
// a drain thread merging the rings in timestamp order into the EventBuffer
// (applying the full policy), and the readers' side of getnext.
class Stream final : public ReadableTrace, private LogHandOff::Owner, private StreamIntake::Owner {
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
    bool running() const { return phase_ == StreamPhase::Running; }
    bool shut_down() const { return phase_ == StreamPhase::ShutDown; }
    int initialize(pid_t target, const Attributes &attributes, int log_fd);
    int open_log(int log_fd, size_t run_bytes_wanted, std::unique_ptr<log::LogWriter> &out);
    void take_lane_runs_locked();
    void stop_locked(std::unique_lock<TrackedMutex> &lock);
    void wait_for_flushes_locked(std::unique_lock<TrackedMutex> &lock);
    log::FinalState final_state_locked();
    // LogHandOff::Owner, under the lock.
    bool take_loss_report(pt_record &record, posix_trace_overflow_data &loss) override;
    std::optional<std::string> name_for_log(uint32_t id) const override;
    void queue_system_event(trace_event_id_t id, uint64_t monotonic_ns, const void *data,
                            size_t size) override;
    uint64_t handed_over_before_ns() const override;
    uint64_t delivered_ns() const override;
    void stop_for_full_log() override;
    // StreamIntake::Owner, under the lock.
    void stop_recording_while_full() override;
    void flush_to_log(uint64_t timestamp_ns) override;
    void drain_loop(std::stop_token stop);
    std::optional<timespec> drain_timeout_locked();
    void drain_pass_locked();
    void overwrite_before_taken_back_locked();
    void account_refusals_locked(uint64_t now_ns, uint64_t refused);
    LossPlacement loss_placement_locked() const;
    void set_kernel_state_locked(pt_stream_state state);
    Recording::Plan recording_plan(pid_t target, const Attributes &attributes) const;
    KernelProgram &kernel() { return recording_.kernel(); }
    ProbeAttacher *probes() { return recording_.probes(); }
    RingMerger &merger() { return recording_.merger(); }
    const RingMerger &merger() const { return recording_.merger(); }
    void distrust_sleeps_locked();
    uint64_t discard_recorded_locked();
    int select_thread_event_programs_locked();
    void auto_restart_locked();
    void cancel_auto_restart_locked();
    void queue_system_event_locked(trace_event_id_t id, uint64_t timestamp_ns, const void *data,
                                   size_t size);
    pt_record system_record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const override;
    void queue_loss_events_locked(const LossReport &loss, uint64_t timestamp_ns);
    void queue_loss_window_locked(const LossWindow &window);
    void flush_locked(std::unique_lock<TrackedMutex> &lock, uint64_t until_ns);
    void resume_running_locked();
    bool available_locked() const;
    void update_readable_locked();
    bool take_loss_report_locked(pt_record &record, posix_trace_overflow_data &loss);
    int read_locked(const EventDestination &to);
    bool filtered_locked(trace_event_id_t id) const;

    Attributes attributes_{};
    pid_t creator_pid_ = 0;
    pid_t target_pid_ = 0;
    SystemSlot slot_;
    Recording recording_;
    std::unique_ptr<StreamStore> store_;
    std::unique_ptr<FullPolicy> full_policy_;
    std::optional<StreamIntake> intake_; // into store_, once the stream is set up
    LossLedger ledger_;
    std::optional<LossReports> loss_reports_; // from the rings' creation on
    UniqueFd readable_;                       // eventfd, readable while available_locked()
    LibraryThreads::Thread drain_;

    mutable TrackedMutex mutex_;
    std::condition_variable_any flushed_;
    StreamPhase phase_ = StreamPhase::Suspended;
    bool readable_signaled_ = false;
    FilterHistory filters_;
    std::optional<SystemEventQueue> system_events_;
    uint64_t flush_requested_ = 0;
    uint64_t flush_completed_ = 0;
    uint64_t flush_until_ns_ = 0;
    uint64_t safe_ns_ = 0;      // monotonic; everything older is delivered
    uint64_t last_pass_ns_ = 0; // monotonic; when the latest drain pass began
    uint64_t started_ns_ = 0;   // monotonic; the latest posix_trace_start's stamp
    uint64_t suspended_ns_ = 0; // monotonic; when the kernel side stopped recording (0: it records)
    uint64_t passes_ = 0;
    DrainSchedule schedule_;
    int64_t realtime_offset_ns_ = 0; // realtime - monotonic, sampled at creation
    std::unique_ptr<StreamUserEvents> user_events_;
    std::unique_ptr<StreamEventTypes> event_types_;
    std::optional<SharedUserEventNames> shared_names_;
    // The stages between the merge and the store.
    std::unique_ptr<RecordPipeline> pipeline_;
    // Every traced process looked at when lifecycle records were lost.
    std::unique_ptr<ProcessRescan> rescan_;
    std::unique_ptr<LogHandOff> log_; // a stream with a trace log
};

} // namespace posixtrace
