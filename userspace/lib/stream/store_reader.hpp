#pragma once
#include <trace.h>

#include "events/event_destination.hpp"
#include "stages/filter_history.hpp"
#include "store/loss_ledger.hpp"
#include "store/stream_store.hpp"
#include "stream/system_event_queue.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace {

// The readers' side of a stream's store: the next event for getnext, after
// the reports due before it of what POSIX_TRACE_LOOP overwrote, and an
// eventfd readable exactly while getnext has something to say, which the
// readers wait on. Every call is made under the stream's lock.
class StoreReader {
public:
    StoreReader(StreamStore &store, LossLedger &ledger, const FilterHistory &filters,
                const SystemEventQueue &system_events);
    StoreReader(const StoreReader &) = delete;
    StoreReader &operator=(const StoreReader &) = delete;

    bool valid() const { return bool(readable_); }
    int readable_fd() const { return readable_.get(); }

    enum class Read { Nothing, Report, Event };
    Read read(const EventDestination &to);
    // The overflow event of what LOOP overwrote, then the resume event (each
    // unless filtered), due before the oldest event left. False when none is.
    bool take_loss_report(pt_record &record, posix_trace_overflow_data &loss);
    // A stream shut down is readable for good: getnext answers EINVAL.
    void update_readable(bool shut_down);
    // Records of chunks kept in place that could not be read, counted lost.
    void count_damaged();

private:
    StreamStore &store_;
    LossLedger &ledger_;
    const FilterHistory &filters_;
    const SystemEventQueue &system_events_;
    UniqueFd readable_;
    bool signaled_ = false;
};

} // namespace posixtrace
