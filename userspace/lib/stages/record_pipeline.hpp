#pragma once
#include <posix_trace/events.h>
#include <sys/types.h>
#include <trace.h>

#include <cstdint>

#include "events/stream_user_events.hpp"
#include "posixtrace.h"
#include "stages/cut_offs.hpp"
#include "stages/filter_history.hpp"
#include "stages/hidden_wakeups.hpp"
#include "stages/library_thread_filter.hpp"
#include "stages/process_follower.hpp"
#include "stages/process_probes.hpp"
#include "stages/record_kind.hpp"
#include "stages/thread_agent_notifier.hpp"
#include "stages/user_id_translation.hpp"

namespace posixtrace {

// What the stages made of one record leaving the merge. `header` and `data`
// are the record's own unless a stage rewrote them: then they point into
// the delivery itself, which is filled in place and never copied. Only
// what a stage rewrites is written: a delivery costs the drain nothing per
// event beyond its first fields.
struct Delivery {
    enum class Action {
        Store,  // `header` and `data` go into the stream
        Skip,   // not the stream's, and no loss (a notice, cleared, hidden)
        Refuse, // the stream's, refused: `refused_events` are lost
    };
    Action action = Action::Skip;
    const pt_record *header = nullptr;
    const void *data = nullptr;
    uint64_t refused_events = 0;
    // The kernel's report about a thread: the events it counts as hidden
    // (lost in the kernel), and whether a resume event follows it.
    uint64_t hidden_in_kernel = 0;
    bool resume_after = false;
    union {
        pt_td_data thread;
        posix_trace_overflow_data lost;
    } rewritten_data;
    // Last: its data are not in it (a flexible array).
    pt_record rewritten_header;

    Delivery() = default;
    Delivery(const Delivery &) = delete;
    Delivery &operator=(const Delivery &) = delete;
};

// The stages between the merge and the store. A record is classified once,
// then each stage that concerns its kind looks at it in turn: following
// processes (every lifecycle record, delivered or not), hiding the library's
// own threads, telling thread agents, cut-offs (clear, an UNTIL_FULL
// restart), user-id translation, td_concurrency correction, and the hidden
// wakeups the kernel's thread reports stand for.
class RecordPipeline {
public:
    // `creator`: the process whose library threads are hidden. `filters`:
    // the stream's, as they change.
    RecordPipeline(pid_t creator, StreamUserEvents &user_events, const FilterHistory &filters);

    // Once a merge pass, before its records are looked at.
    void refresh() { library_threads_.refresh(); }
    // `probes`: the stream's, or nullptr once it has none.
    void deliver(const pt_record &record, const uint8_t *data, ProcessProbes *probes,
                 Delivery &out);
    // A record the stream does not deliver (late, discarded): its process
    // is still followed; returns how many events are lost with it.
    uint64_t drop(const pt_record &record, ProcessProbes *probes);

    CutOffs &cut_offs() { return cut_offs_; }
    HiddenWakeups &hidden_wakeups() { return hidden_wakeups_; }
    ThreadAgentNotifier &agents() { return agents_; }
    UserIdTranslation &user_ids() { return user_ids_; }

private:
    void deliver_user_event(const pt_record &record, Delivery &out);
    void deliver_thread_event(const pt_record &record, const uint8_t *data, Delivery &out);
    void deliver_thread_report(const pt_record &record, const uint8_t *data, Delivery &out);
    uint64_t events_lost_with(const pt_record &record) const;

    const FilterHistory &filters_;
    ProcessFollower processes_;
    LibraryThreadFilter library_threads_;
    ThreadAgentNotifier agents_;
    CutOffs cut_offs_;
    UserIdTranslation user_ids_;
    HiddenWakeups hidden_wakeups_;
};

} // namespace posixtrace
