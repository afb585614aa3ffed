#include "stream/stream_parts.hpp"

#include <unistd.h>

#include <cerrno>
#include <utility>

#include "stream/lane_runs.hpp"
#include "util/clock.hpp"

namespace posixtrace {

int StreamParts::assemble(pid_t target, const Attributes &attributes, int log_fd,
                          const Holder &holder)
{
    system_events.emplace(target, filters);
    // Called under the stream's lock; the kernel side goes only at shutdown.
    user_events = std::make_unique<StreamUserEvents>(
        target,
        [this](pid_t pid) {
            return recording.has_kernel() ? recording.kernel().image_of(pid) : PT_IMAGE_NONE;
        },
        target == getpid() ? &UserEventRegistry::instance() : nullptr);
    event_types = std::make_unique<StreamEventTypes>(*user_events, recording);
    pipeline = std::make_unique<RecordPipeline>(getpid(), *user_events, filters);
    rescan = std::make_unique<ProcessRescan>(*user_events);
    Recording::Plan plan = Recording::plan_for(target, attributes);
    // A FLUSH stream of its own process hands its lanes' chunks to its log whole.
    size_t run_bytes = plan.lanes_wanted && attributes.stream_full_policy == POSIX_TRACE_FLUSH
                           ? LaneRuns::kRunBytesAtLeast
                           : 0;
    realtime_offset_ns = realtime_minus_monotonic();
    std::optional<TraceOrigin> new_origin = TraceOrigin::of_new_stream(realtime_offset_ns);
    if (!new_origin)
        return ENOMEM;
    origin = std::move(*new_origin);
    std::unique_ptr<log::LogWriter> log_writer;
    if (log_fd >= 0) // first: a descriptor the log cannot use costs no BPF load
        if (int err = open_log(log_fd, target, attributes, run_bytes, log_writer))
            return err;
    if (plan.inherit && target == getpid())
        shared_names.emplace(); // one numbering for the stream's processes

    // Every record is reserved in a ring created after this: stamped later.
    uint64_t rings_created_after_ns = monotonic_now();
    if (int err = recording.open(plan, rings_created_after_ns))
        return err; // EPERM first: only a loaded program shows the privileges
    if (int err = SystemSlot::acquire(slot))
        return err;
    if (recording.reused()) // what its earlier stream left in the rings is not this one's
        pipeline->cut_offs().clear_before(rings_created_after_ns);
    user_events->set_primary_image(recording.kernel().image_of(target));
    if (int err = select_thread_event_programs())
        return err;

    store = std::make_unique<StreamStore>(attributes.stream_size, attributes.stream_full_policy,
                                          realtime_offset_ns);
    if (!store->valid())
        return ENOMEM;
    reader.emplace(*store, ledger, filters, *system_events);
    if (!reader->valid())
        return errno;
    assemble_store(attributes, holder, rings_created_after_ns);
    if (log_writer) {
        LogHandOff::Parts parts{*store,
                                ledger,
                                *full_policy,
                                *reader,
                                *event_types,
                                *drain,
                                recording.merger(),
                                *system_events,
                                realtime_offset_ns};
        log = std::make_unique<LogHandOff>(std::move(log_writer), parts, holder.log);
        drain->hand_runs_to(log.get());
        if (recording.has_lanes())
            take_lane_runs();
    } else if (recording.has_lanes()) {
        intake->lend_chunks_judged_by(chunk_judge());
    }
    return 0;
}

// The store's full policy, the intake into it, and the drain's passes.
void StreamParts::assemble_store(const Attributes &attributes, const Holder &holder,
                                 uint64_t rings_created_after_ns)
{
    full_policy = FullPolicy::make(attributes.stream_full_policy);
    intake.emplace(*store, *full_policy, *pipeline, ledger, filters, holder.phase, holder.intake);
    drain.emplace(StreamDrain::Parts{recording, *pipeline, *rescan, *intake, *store, ledger,
                                     *system_events, filters, holder.phase, nullptr},
                  rings_created_after_ns);
}

int StreamParts::open_log(int log_fd, pid_t target, const Attributes &attributes,
                          size_t run_bytes_wanted, std::unique_ptr<log::LogWriter> &out)
{
    // The writing thread wakes the drain thread when a flush is done, so the
    // flush-stop event is recorded then.
    auto progress = [this] { recording.wake(); };
    return log::LogWriter::create(log_fd, attributes, target, origin, event_types->named(),
                                  run_bytes_wanted, progress, out);
}

// A chunk of a lane is taken whole when the stages would pass each of its
// records as it is.
ChunkJudge StreamParts::chunk_judge()
{
    return {[this](uint64_t ns) { return pipeline->cut_offs().of(ns) == CutOffs::Verdict::Keep; },
            [this](const pt_record &record) {
                return classify(record) == RecordKind::UserEvent &&
                       !(record.flags & PT_RECORD_NOTICE_ONLY) &&
                       pipeline->user_ids().keeps_id(record);
            }};
}

// Whole chunks of the lanes go to the log as runs when the stream would
// store each of their records as it came.
void StreamParts::take_lane_runs()
{
    log->take_runs({chunk_judge(), [this](uint32_t id) { return event_types->name_of(id); }});
}

int StreamParts::select_thread_event_programs()
{
    uint32_t wanted = 0;
    for (unsigned i = 0; i < POSIX_TRACE_TD_EVENT_COUNT; ++i)
        if (!pipeline->agents().empty() || !filters.filters(POSIX_TRACE_TD_EVENT_FIRST + i))
            wanted |= 1u << i;
    return recording.kernel().select_thread_event_programs(wanted);
}

} // namespace posixtrace
