#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>

#include "sources/record_source.hpp"

namespace posixtrace {

enum class StreamLoss {
    Overwritten, // POSIX_TRACE_LOOP made room
    Refused,     // POSIX_TRACE_UNTIL_FULL was full, or larger than the stream
    Late,        // came after younger events had been delivered
    Unwritten,   // the stream's log could not take it
};

// Every count a stream keeps of what it recorded and lost, in one place:
// posix_trace_get_counters' and the loss counters' figures, the overrun
// status, and what the sources had counted at the last look, so that each
// loss is counted once, when it is first seen, and reported where it
// happened (the stream decides where: it knows the merge's times).
class LossLedger {
public:
    void count_recorded(uint64_t events = 1) { counters_.recorded += events; }
    // A log that failed to write them: they were recorded, now they are lost.
    void take_back_recorded(uint64_t events) { counters_.recorded -= events; }
    void count_stream_loss(StreamLoss kind, uint64_t events);
    void count_kernel_loss(uint64_t ring_full, uint64_t switches_unreported, uint64_t runs_skipped);

    // Stream losses owed a report by the next merge pass.
    void owe_report(uint64_t events) { owed_ += events; }
    uint64_t take_owed();

    // What the sources' rings could not take since the last look (not yet
    // counted: count_kernel_loss()). `counted`: their totals now.
    SourceLosses fresh_transport(const SourceLosses &counted);
    // The programs' skipped runs since the last look; the total may drop
    // when a program is detached, never the ledger's.
    uint64_t fresh_misses(uint64_t total);
    // UNTIL_FULL's refusals in the sources since the last look (not yet
    // counted), and in `since_ns` when that look was.
    uint64_t fresh_refusals(uint64_t counted, uint64_t now_ns, uint64_t &since_ns);

    // posix_stream_overrun_status: set by any loss, cleared as read.
    bool overrun() const { return overrun_; }
    void set_overrun() { overrun_ = true; }
    bool take_overrun();
    const posix_trace_counters &counters() const { return counters_; }
    const posix_trace_loss_counters &losses() const { return losses_; }
    uint64_t unwritten() const { return unwritten_; }

    // posix_trace_clear: the counts start again from zero, and what the
    // sources counted until now is no loss of the stream's any more.
    void clear(const SourceLosses &counted, uint64_t misses, uint64_t now_ns);

private:
    posix_trace_counters counters_{};
    posix_trace_loss_counters losses_{};
    uint64_t unwritten_ = 0; // apart from losses_: see <posix_trace/events.h>
    bool overrun_ = false;
    uint64_t owed_ = 0;
    // The sources' counts at the last look.
    SourceLosses transport_seen_{};
    uint64_t misses_seen_ = 0;
    uint64_t refusals_seen_ = 0;
    uint64_t refusals_read_ns_ = 0; // monotonic
};

} // namespace posixtrace
