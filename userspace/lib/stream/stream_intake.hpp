#pragma once
#include <trace.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "posixtrace.h"
#include "stages/filter_history.hpp"
#include "stages/record_pipeline.hpp"
#include "store/loss_ledger.hpp"
#include "store/stream_store.hpp"
#include "stream/chunk_judge.hpp"
#include "stream/ring_merger.hpp"

namespace posixtrace {

// Where the merge's records go: through the stages (RecordPipeline) into
// the store, under the stream's full policy, each event counted once in the
// ledger, kept or lost. Stamps turn from CLOCK_MONOTONIC into
// CLOCK_REALTIME on the way in. What a policy decides beyond the store (the
// stream stops, its log takes everything) the stream carries out, through
// Owner.
class StreamIntake {
public:
    class Owner {
    public:
        // POSIX_TRACE_UNTIL_FULL filled the stream: the kernel records no more.
        virtual void stop_recording_while_full() = 0;
        // POSIX_TRACE_FLUSH: what the stream holds goes to its log first.
        virtual void flush_to_log(uint64_t timestamp_ns) = 0;
        virtual pt_record system_record(trace_event_id_t id, uint64_t timestamp_ns,
                                        size_t size) const = 0;

    protected:
        ~Owner() = default;
    };

    // `phase` is the stream's, read as each event is stored. Events are
    // stored stamped in realtime, by the store's offset.
    StreamIntake(StreamStore &store, const FullPolicy &policy, RecordPipeline &pipeline,
                 LossLedger &ledger, const FilterHistory &filters, const StreamPhase &phase,
                 Owner &owner)
        : store_(store), policy_(policy), pipeline_(pipeline), ledger_(ledger), filters_(filters),
          phase_(phase), owner_(owner)
    {
    }

    // A record out of the merge, as the stages leave it.
    void deliver(const pt_record &record, const uint8_t *data, ProcessProbes *probes);
    // An event past the stages (a system event), under the full policy;
    // `namespace_ids`: those of its thread, if it has some.
    void store(const pt_record &record, const void *data,
               const pt_namespace_ids *namespace_ids = nullptr);
    // A record the merge drops (it came late): counted lost, reported by
    // the drain's next pass.
    void drop_late(const pt_record &record, ProcessProbes *probes);
    // Records dropped on their way to the store: reported by the drain's
    // next pass, before anything younger than what was delivered.
    void note_loss(StreamLoss kind, uint64_t count);
    // What the store holds stamped before `monotonic_ns` goes, counted as
    // the policy's own overwriting is (its report leads what is left).
    void overwrite_before(uint64_t monotonic_ns);

    // Whole chunks of the lanes whose records `judge` passes stay where the
    // lanes wrote them, kept by the store until read, under a full policy
    // that lends (the copy into the store was most of what a record cost).
    void lend_chunks_judged_by(ChunkJudge judge) { judge_ = std::move(judge); }
    bool lends_chunks() const { return judge_ && policy_.lends(); }
    // RingMerger's chunk sink: the chunk kept in place, counted recorded,
    // and its latest stamp; nullopt, and the merge reads it.
    std::optional<uint64_t> lend_chunk(const RingMerger::Chunk &chunk);
    // What a chunk's records are, as judged for lending.
    struct JudgedChunk {
        uint64_t first_ns = 0, last_ns = 0;
        size_t bytes = 0;
        uint32_t events = 0;
    };

private:
    void refuse(const pt_record &record, const void *data);
    void push(pt_record record, const void *data, const pt_namespace_ids *namespace_ids = nullptr);
    void stop_full(uint64_t timestamp_ns);
    void count_overwritten();
    void count_damaged();
    bool worth_lending(const RingMerger::Chunk &chunk, const JudgedChunk &judged) const;
    static constexpr uint64_t kMostLentAheadNs = 4'000'000;

    StreamStore &store_;
    const FullPolicy &policy_;
    RecordPipeline &pipeline_;
    LossLedger &ledger_;
    const FilterHistory &filters_;
    const StreamPhase &phase_;
    Owner &owner_;
    std::optional<ChunkJudge> judge_;
};

} // namespace posixtrace
