#pragma once
#include <trace.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "stages/filter_history.hpp"
#include "stages/record_pipeline.hpp"
#include "store/loss_ledger.hpp"
#include "store/loss_placement.hpp"
#include "store/loss_reports.hpp"
#include "store/stream_store.hpp"
#include "stream/drain_schedule.hpp"
#include "stream/process_rescan.hpp"
#include "stream/recording.hpp"
#include "stream/stream_intake.hpp"
#include "stream/system_event_queue.hpp"
#include "util/tracked_mutex.hpp"

namespace posixtrace {

class LogHandOff;

// The drain's passes over a stream's recording: each moves what the
// sources recorded through the merge into the stream (StreamIntake) or its
// log, finds and places what they lost, and follows the traced processes.
// It keeps the merge's safe point (nothing stamped before it can still
// come), which system events are queued after and flushes wait for. Every
// call is made under the stream's lock.
class StreamDrain {
public:
    // The stream's parts a pass works on.
    struct Parts {
        Recording &recording;
        RecordPipeline &pipeline;
        ProcessRescan &rescan;
        StreamIntake &intake;
        StreamStore &store;
        LossLedger &ledger;
        SystemEventQueue &system_events;
        FilterHistory &filters;
        const StreamPhase &phase;
        LogHandOff *log; // a stream with a trace log: see hand_runs_to()
    };

    // `rings_created_after_ns`: CLOCK_MONOTONIC, before the sources' rings
    // existed.
    StreamDrain(const Parts &parts, uint64_t rings_created_after_ns)
        : parts_(parts), loss_reports_(parts.ledger, rings_created_after_ns),
          last_pass_ns_(rings_created_after_ns)
    {
    }
    StreamDrain(const StreamDrain &) = delete;
    StreamDrain &operator=(const StreamDrain &) = delete;

    // The log that takes whole lane chunks as runs, if it does; it is made
    // after the drain, which it queues its system events with.
    void hand_runs_to(LogHandOff *log) { parts_.log = log; }

    // How long the drain thread sleeps before its next pass; nullopt: until
    // woken.
    std::optional<timespec> timeout();
    // One pass; a flush whose time the safe point passed is done.
    void pass();

    // Waits for a pass that leaves everything stamped before `until_ns`
    // (CLOCK_MONOTONIC) delivered, or until `abandoned()` (the stream shut
    // down). The lock is let go meanwhile.
    void flush(std::unique_lock<TrackedMutex> &lock, uint64_t until_ns,
               const std::function<bool()> &abandoned);
    // The flushes waiting are to look at `abandoned()` again.
    void wake_flushes() { flushed_.notify_all(); }
    bool flush_waiting() const { return flush_completed_ < flush_requested_; }

    // System events are queued no earlier than the safe point.
    uint64_t safe_ns() const { return safe_ns_; }
    void queue_system_event(trace_event_id_t id, uint64_t timestamp_ns, const void *data,
                            size_t size);
    void queue_loss(const LossReport &loss, uint64_t timestamp_ns);
    // An event recorded and held apart, to be delivered in its place.
    void queue_recorded(const pt_record &record, const uint8_t *data)
    {
        parts_.system_events.queue_record(record, data, safe_ns_);
    }
    void queue_loss_window(const LossWindow &window);
    // UNTIL_FULL's refusals in the sources, `refused` in all, counted as
    // the sources count them (see the definition).
    void account_refusals(uint64_t now_ns, uint64_t refused);
    // Drops what the sources recorded and the merge has not delivered;
    // returns how many events that was.
    uint64_t discard_recorded();

    // The latest posix_trace_start; the kernel side's state as it changes.
    void note_started(uint64_t monotonic_ns) { started_ns_ = monotonic_ns; }
    void note_recording_state(pt_stream_state state, uint64_t monotonic_ns);
    // A change of state or filter, or a loss, opens a gap in what is
    // recorded: a sleep seen before it says nothing of the wakeups after.
    void distrust_sleeps();

private:
    // How long a lane's chunk being written waits to be taken whole as a
    // run: a pass's period, so the safe point holds back the other sources
    // by about one pass more.
    static constexpr uint64_t kUnfinishedChunkWaitNs = DrainSchedule::kPeriodNs;

    RingMerger &merger() { return parts_.recording.merger(); }
    ProcessProbes *probes() { return parts_.recording.probes(); }
    void read_losses(uint64_t now_ns);
    void merge(uint64_t now_ns);
    uint64_t unfinished_chunks_wait_after(uint64_t now_ns) const;
    void overwrite_before_taken_back();
    LossPlacement loss_placement();

    Parts parts_;
    LossReports loss_reports_;
    DrainSchedule schedule_;
    std::condition_variable_any flushed_;
    uint64_t flush_requested_ = 0;
    uint64_t flush_completed_ = 0;
    uint64_t flush_until_ns_ = 0;
    uint64_t safe_ns_ = 0;      // monotonic; everything older is delivered
    uint64_t last_pass_ns_ = 0; // monotonic; when the latest pass began
    uint64_t started_ns_ = 0;   // monotonic; the latest posix_trace_start's stamp
    uint64_t suspended_ns_ = 0; // monotonic; when the kernel side stopped recording (0: it records)
    uint64_t passes_ = 0;
};

} // namespace posixtrace
