#pragma once
#include <trace.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "attributes/attributes.hpp"
#include "attributes/trace_origin.hpp"
#include "events/stream_user_events.hpp"
#include "log/log_writer.hpp"
#include "stages/filter_history.hpp"
#include "stages/record_pipeline.hpp"
#include "store/loss_ledger.hpp"
#include "store/stream_store.hpp"
#include "stream/log_hand_off.hpp"
#include "stream/process_rescan.hpp"
#include "stream/recording.hpp"
#include "stream/store_reader.hpp"
#include "stream/stream_drain.hpp"
#include "stream/stream_event_types.hpp"
#include "stream/stream_intake.hpp"
#include "stream/system_event_queue.hpp"
#include "stream/system_slots.hpp"

namespace posixtrace {

// What a stream is made of, and how the parts are put together, each after
// the parts it needs: what the stream records and names (filters, user
// events, event types), where its records come from (Recording), the
// stages, the store under its full policy, the losses' ledger, the drain's
// passes, the readers' side and the log. Stream is the façade over them:
// it holds the lock they are used under and decides what its calls do.
struct StreamParts {
    // What the parts ask of the stream that holds them.
    struct Holder {
        StreamIntake::Owner &intake;
        LogHandOff::Owner &log;
        const StreamPhase &phase;
    };

    StreamParts() = default;
    StreamParts(const StreamParts &) = delete;
    StreamParts &operator=(const StreamParts &) = delete;

    // `attributes` as the stream keeps them (their creation time set);
    // `log_fd` >= 0: a log written to that descriptor. 0 or an errno; the
    // parts put together until then are left for shutdown.
    int assemble(pid_t target, const Attributes &attributes, int log_fd, const Holder &holder);

    // The kernel programs of the thread event types the stream may record:
    // those its filter lets through, and all of them while a thread agent
    // may ask for any. 0 or an errno.
    int select_thread_event_programs();

    SystemSlot slot;
    Recording recording;
    FilterHistory filters;
    std::optional<SystemEventQueue> system_events;
    // realtime - monotonic, sampled once: the conversion keeps the order
    // (and the intervals) of the kernel's monotonic stamps exactly.
    int64_t realtime_offset_ns = 0;
    TraceOrigin origin; // written before the stream is published, then only read
    std::unique_ptr<StreamUserEvents> user_events;
    std::unique_ptr<StreamEventTypes> event_types;
    std::optional<SharedUserEventNames> shared_names;
    // The stages between the merge and the store.
    std::unique_ptr<RecordPipeline> pipeline;
    // Every traced process looked at when lifecycle records were lost.
    std::unique_ptr<ProcessRescan> rescan;
    std::unique_ptr<StreamStore> store;
    std::unique_ptr<FullPolicy> full_policy;
    LossLedger ledger;
    std::optional<StreamIntake> intake; // into the store
    std::optional<StreamDrain> drain;
    std::optional<StoreReader> reader;
    std::unique_ptr<LogHandOff> log; // a stream with a trace log

private:
    int open_log(int log_fd, pid_t target, const Attributes &attributes, size_t run_bytes_wanted,
                 std::unique_ptr<log::LogWriter> &out);
    void assemble_store(const Attributes &attributes, const Holder &holder,
                        uint64_t rings_created_after_ns);
    ChunkJudge chunk_judge();
    void take_lane_runs();
};

} // namespace posixtrace
