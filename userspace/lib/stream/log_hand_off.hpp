#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "log/log_writer.hpp"
#include "store/loss_ledger.hpp"
#include "store/stream_store.hpp"
#include "stream/lane_runs.hpp"
#include "stream/ring_merger.hpp"
#include "stream/store_reader.hpp"
#include "stream/stream_drain.hpp"
#include "stream/stream_event_types.hpp"
#include "stream/system_event_queue.hpp"

namespace posixtrace {

// A stream's side of its trace log: what each flush moves from the store
// into the log (the overwrite reports first, the lanes' runs among the
// events in order), the whole lane chunks taken as runs between flushes
// (POSIX_TRACE_FLUSH with lanes), a flush-stop event as each flush is
// written, and what a failed write costs (its events taken back from
// `recorded` and counted lost, one posix_trace_error event). Called under
// the stream's lock; the log's writing thread never takes it.
class LogHandOff {
public:
    // The stream's parts it works with.
    struct Parts {
        StreamStore &store;
        LossLedger &ledger;
        const FullPolicy &full_policy;
        StoreReader &reader; // the overwrite reports
        const StreamEventTypes &event_types;
        StreamDrain &drain; // system events, and the merge's safe point
        const RingMerger &merger;
        const SystemEventQueue &system_events;
        int64_t realtime_offset_ns; // realtime - monotonic, the stream's
    };
    // What it asks of its stream, under the stream's lock.
    class Owner {
    public:
        // The log filled under its UNTIL_FULL policy: the stream stops.
        virtual void stop_for_full_log() = 0;

    protected:
        ~Owner() = default;
    };

    LogHandOff(std::unique_ptr<log::LogWriter> log, const Parts &parts, Owner &owner);
    LogHandOff(const LogHandOff &) = delete;
    LogHandOff &operator=(const LogHandOff &) = delete;

    // Whole lane chunks become runs of the log from now on, judged by
    // `judge`, if the log takes runs.
    void take_runs(LaneRuns::Judge judge);
    bool takes_runs() const { return runs_ && !read_with_getnext_ && !log_->first_error(); }
    // A reader reads the stream with getnext: no chunk becomes a run from
    // now on, and the runs held go back to the stream, to be read.
    void read_with_getnext();
    // RingMerger's chunk sink: the chunk as a run held in the stream's
    // room (a stream it fills flushes first); nullopt, and the merge reads it.
    std::optional<uint64_t> take_chunk(const RingMerger::Chunk &chunk);

    // Hands every event of the store, losses reported first, to the log
    // writer; false, and nothing handed, once the log's writes have failed.
    bool move_all();
    // move_all(), then the flush-start event, stamped `start_ns`
    // (CLOCK_MONOTONIC), in the emptied stream; false, nothing started, as
    // move_all().
    bool flush(uint64_t start_ns);
    int first_error() const { return log_->first_error(); }
    // Flushes handed over and not written yet.
    bool flushes_pending() const { return !flushes_.empty() && !log_->done(flushes_.back()); }
    // A flush-stop event for each flush written since.
    void note_flushes_done();
    // The events the writer failed to write until now, counted lost; a
    // posix_trace_error event the first time a write fails.
    void account_failure();
    // posix_trace_get_status: the flush's and the log's parts.
    void report_status(posix_trace_status_info &status);
    // posix_trace_clear: the runs held go, and the log starts again.
    void clear();
    // What the log's trailer says of the stream, once it is stopped and
    // everything went to the log.
    log::FinalState final_state() const;
    // Waits for every block, writes the trailer; the first write error.
    int close(const log::FinalState &state) { return log_->close(state); }

private:
    void close_full_log(uint64_t timestamp_ns);
    void drop_for_failed_log();
    uint64_t handed_over_before_ns() const;

    Parts parts_;
    Owner &owner_;
    // Before the log: its writing thread may write from a run's memory
    // until the log is gone.
    std::unique_ptr<LaneRuns> runs_;
    LaneRuns::Judge judge_;
    std::unique_ptr<log::LogWriter> log_;
    std::deque<uint64_t> flushes_; // tickets of the flushes still being written
    bool error_reported_ = false;  // posix_trace_error queued for the first failed write
    bool read_with_getnext_ = false;
};

} // namespace posixtrace
