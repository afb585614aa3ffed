#include "store/loss_ledger.hpp"

#include <algorithm>

namespace posixtrace {

void LossLedger::count_stream_loss(StreamLoss kind, uint64_t events)
{
    counters_.lost_in_stream += events;
    switch (kind) {
    case StreamLoss::Overwritten:
        losses_.overwritten += events;
        break;
    case StreamLoss::Refused:
        losses_.refused += events;
        break;
    case StreamLoss::Late:
        losses_.late += events;
        break;
    case StreamLoss::Unwritten:
        unwritten_ += events;
        break;
    }
    overrun_ = true;
}

void LossLedger::count_kernel_loss(uint64_t ring_full, uint64_t switches_unreported,
                                   uint64_t runs_skipped)
{
    losses_.ring_full += ring_full;
    losses_.switches_unreported += switches_unreported;
    losses_.runs_skipped += runs_skipped;
    counters_.lost_in_kernel += ring_full + switches_unreported + runs_skipped;
    overrun_ = true;
}

uint64_t LossLedger::take_owed()
{
    uint64_t owed = owed_;
    owed_ = 0;
    return owed;
}

SourceLosses LossLedger::fresh_transport(const SourceLosses &counted)
{
    SourceLosses fresh{counted.ring_full - transport_seen_.ring_full,
                       counted.unreported_switches - transport_seen_.unreported_switches, 0,
                       counted.overwritten - transport_seen_.overwritten};
    transport_seen_.ring_full = counted.ring_full;
    transport_seen_.unreported_switches = counted.unreported_switches;
    transport_seen_.overwritten = counted.overwritten;
    return fresh;
}

uint64_t LossLedger::fresh_misses(uint64_t total)
{
    uint64_t fresh = total > misses_seen_ ? total - misses_seen_ : 0;
    misses_seen_ = std::max(misses_seen_, total);
    return fresh;
}

uint64_t LossLedger::fresh_refusals(uint64_t counted, uint64_t now_ns, uint64_t &since_ns)
{
    uint64_t fresh = counted - refusals_seen_;
    since_ns = refusals_read_ns_;
    refusals_seen_ = counted;
    refusals_read_ns_ = now_ns;
    return fresh;
}

bool LossLedger::take_overrun()
{
    bool overrun = overrun_;
    overrun_ = false;
    return overrun;
}

void LossLedger::clear(const SourceLosses &counted, uint64_t misses, uint64_t now_ns)
{
    counters_ = {};
    losses_ = {};
    unwritten_ = 0;
    overrun_ = false;
    owed_ = 0;
    transport_seen_ = counted;
    misses_seen_ = misses;
    refusals_seen_ = counted.refused_while_full;
    refusals_read_ns_ = now_ns;
}

} // namespace posixtrace
