// LossLedger alone: each loss counted once, when first seen, into the
// figures posix_trace_get_counters and the loss counters return; a clear
// takes what the sources counted until then as the new zero.
#include <catch2/catch.hpp>

#include "store/loss_ledger.hpp"

using posixtrace::LossLedger;
using posixtrace::SourceLosses;
using posixtrace::StreamLoss;

TEST_CASE("loss ledger: stream losses by kind, in lost_in_stream, and the overrun status")
{
    LossLedger ledger;
    CHECK_FALSE(ledger.overrun());
    ledger.count_recorded(5);
    ledger.count_stream_loss(StreamLoss::Overwritten, 2);
    ledger.count_stream_loss(StreamLoss::Refused, 3);
    ledger.count_stream_loss(StreamLoss::Late, 1);
    ledger.count_stream_loss(StreamLoss::Unwritten, 4);
    ledger.take_back_recorded(4);
    CHECK(ledger.counters().recorded == 1);
    CHECK(ledger.counters().lost_in_stream == 10);
    CHECK(ledger.counters().lost_in_kernel == 0);
    CHECK(ledger.losses().overwritten == 2);
    CHECK(ledger.losses().refused == 3);
    CHECK(ledger.losses().late == 1);
    CHECK(ledger.unwritten() == 4); // apart from the loss counters' struct
    CHECK(ledger.take_overrun());
    CHECK_FALSE(ledger.take_overrun()); // cleared as read
}

TEST_CASE("loss ledger: what the sources counted is fresh once, then seen")
{
    LossLedger ledger;
    SourceLosses fresh = ledger.fresh_transport({10, 2, 0});
    CHECK(fresh.ring_full == 10);
    CHECK(fresh.unreported_switches == 2);
    fresh = ledger.fresh_transport({15, 2, 0});
    CHECK(fresh.ring_full == 5);
    CHECK(fresh.unreported_switches == 0);
    ledger.count_kernel_loss(fresh.ring_full, fresh.unreported_switches, 0);
    CHECK(ledger.counters().lost_in_kernel == 5);
    CHECK(ledger.losses().ring_full == 5);

    CHECK(ledger.fresh_misses(7) == 7);
    CHECK(ledger.fresh_misses(7) == 0);
    CHECK(ledger.fresh_misses(3) == 0); // a detached program's misses went with it
    CHECK(ledger.fresh_misses(9) == 2);

    uint64_t since = 99;
    CHECK(ledger.fresh_refusals(4, 1000, since) == 4);
    CHECK(since == 0);
    CHECK(ledger.fresh_refusals(6, 2000, since) == 2);
    CHECK(since == 1000); // the refusals happened after the previous look
}

TEST_CASE("loss ledger: a clear starts every count again, from the sources' counts")
{
    LossLedger ledger;
    ledger.count_recorded(3);
    ledger.count_kernel_loss(1, 1, 1);
    ledger.owe_report(2);
    ledger.clear({20, 4, 6}, 11, 5000);
    CHECK(ledger.counters().recorded == 0);
    CHECK(ledger.counters().lost_in_kernel == 0);
    CHECK(ledger.losses().runs_skipped == 0);
    CHECK_FALSE(ledger.overrun());
    CHECK(ledger.take_owed() == 0);
    SourceLosses fresh = ledger.fresh_transport({21, 4, 6});
    CHECK(fresh.ring_full == 1);
    CHECK(fresh.unreported_switches == 0);
    CHECK(ledger.fresh_misses(11) == 0);
    uint64_t since = 0;
    CHECK(ledger.fresh_refusals(6, 6000, since) == 0);
    CHECK(since == 5000);
}
