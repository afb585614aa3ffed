// LossLedger alone: each loss counted once, when first seen, into the
// figures posix_trace_get_counters and the loss counters return; a clear
// takes what the sources counted until then as the new zero.
#include <catch2/catch.hpp>

#include "store/loss_ledger.hpp"
#include "store/loss_placement.hpp"
#include "store/loss_reports.hpp"

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

namespace {

using posixtrace::LossPlacement;
using posixtrace::LossWindow;
using posixtrace::PlacedLoss;

constexpr uint64_t kMargin = 20'000;

uint64_t events_in(const std::vector<LossWindow> &windows)
{
    uint64_t events = 0;
    for (const LossWindow &window : windows)
        events += window.loss.in_kernel + window.loss.in_stream;
    return events;
}

} // namespace

TEST_CASE("loss placement: a report goes after the look that did not count it, never before "
          "what was delivered nor before the start",
          "[loss-placement]")
{
    LossPlacement placement(kMargin, 500'000, 300'000);
    CHECK(placement.report_time(1'000'000) == 980'000);
    CHECK(placement.report_time(510'000) == 500'000); // delivered is the floor
    CHECK(LossPlacement(kMargin, 0, 300'000).report_time(310'000) == 300'000); // the start is
    CHECK(LossPlacement(kMargin, 0, 0).report_time(5'000) == 0);               // no wrap
}

TEST_CASE("loss placement: runs of a ring's losses are reported where they began, each window "
          "closed once counted",
          "[loss-placement]")
{
    LossPlacement placement(kMargin, 0, 0);
    // 7 events known only to come after the look at 1 ms; two runs, one
    // noted before the previous reading of the counts (1.5 ms): moved up.
    std::vector<PlacedLoss> runs{{3'000'000, 40}, {1'200'000, 10}};
    auto windows = placement.kernel_windows(7, runs, 50, 1'000'000, 1'500'000, 4'000'000);
    REQUIRE(windows.size() == 3);
    CHECK(windows[0].loss.in_kernel == 7);
    CHECK(windows[0].from_ns == 980'000);
    CHECK(windows[1].loss.in_kernel == 10);
    CHECK(windows[1].from_ns == 1'480'000);
    CHECK(windows[2].loss.in_kernel == 40);
    CHECK(windows[2].from_ns == 3'000'000);
    for (const LossWindow &window : windows) {
        CHECK(window.to_ns == 4'000'000);
        CHECK(window.loss.in_stream == 0);
    }

    SECTION("no more than the fresh count, however many the runs say")
    {
        auto capped = placement.kernel_windows(0, runs, 25, 1'000'000, 1'500'000, 4'000'000);
        CHECK(events_in(capped) == 25);
        CHECK(capped.front().from_ns == 1'480'000); // the earliest run first
    }
    SECTION("a window never ends before it begins")
    {
        auto late =
            placement.kernel_windows(0, {{5'000'000, 1}}, 1, 1'000'000, 1'500'000, 4'000'000);
        REQUIRE(late.size() == 1);
        CHECK(late[0].to_ns == 5'000'000);
    }
}

TEST_CASE("loss placement: many runs share at most 16 reports, each at its earliest run",
          "[loss-placement]")
{
    LossPlacement placement(kMargin, 0, 0);
    std::vector<PlacedLoss> runs;
    for (uint64_t i = 0; i < 1000; ++i)
        runs.push_back({10'000'000 + (999 - i) * 1'000, 2}); // out of order
    auto windows = placement.kernel_windows(0, runs, 2000, 1'000'000, 1'000'000, 20'000'000);
    CHECK(windows.size() == LossPlacement::kMostPlacedReports);
    CHECK(events_in(windows) == 2000);
    CHECK(windows.front().from_ns == 10'000'000);
    for (size_t i = 1; i < windows.size(); ++i)
        CHECK(windows[i - 1].from_ns < windows[i].from_ns);
}

namespace {

using posixtrace::LossReports;

// A pass of a stream recording since 300 µs, the merge's deliveries at
// 500 µs, the pass before begun at 900 µs, stopped at 9 ms (the windows'
// ends, so they do not depend on the clock).
LossReports::Pass pass_number(uint64_t passes_before, uint64_t flush_ticket = 0,
                              uint64_t taken_back_after_ns = UINT64_MAX)
{
    return {passes_before, flush_ticket,        900'000,
            9'000'000,     taken_back_after_ns, LossPlacement(kMargin, 500'000, 300'000)};
}

// A ledger and its reports, the counts first read at `first_read_ns`; the
// programs' skipped runs total `misses`, each reading of them counted.
struct Reports {
    explicit Reports(uint64_t first_read_ns) : reports(ledger, first_read_ns) {}
    std::vector<LossWindow> look(const SourceLosses &counted, uint64_t read_ns,
                                 const LossReports::Pass &pass)
    {
        return reports.look(
            counted, read_ns,
            [this] {
                ++misses_reads;
                return misses;
            },
            pass);
    }
    LossLedger ledger;
    LossReports reports;
    uint64_t misses = 0;
    int misses_reads = 0;
};

} // namespace

TEST_CASE("loss reports: a loss is counted once, reported after the reading that did not count "
          "it, in a window that ends once counted",
          "[loss-reports]")
{
    Reports reports(1'000'000);
    LossLedger &ledger = reports.ledger;
    SourceLosses counted;
    counted.ring_full = 5;
    counted.unreported_switches = 2;
    auto windows = reports.look(counted, 3'000'000, pass_number(1));
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].loss.in_kernel == 7);
    CHECK(windows[0].from_ns == 980'000); // the reading before, less the clocks' margin
    CHECK(windows[0].to_ns == 9'000'000);
    CHECK(ledger.counters().lost_in_kernel == 7);
    CHECK(reports.look(counted, 4'000'000, pass_number(2)).empty());

    counted.ring_full = 8; // after the reading at 3 ms
    windows = reports.look(counted, 5'000'000, pass_number(3));
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].loss.in_kernel == 3);
    CHECK(windows[0].from_ns == 3'980'000);
    CHECK(ledger.counters().lost_in_kernel == 10);
}

TEST_CASE("loss reports: skipped runs are read every few passes and at each flush, and reported "
          "after the reading before",
          "[loss-reports]")
{
    Reports reports(1'000'000);
    int &reads = reports.misses_reads;
    SourceLosses none;
    CHECK(reports.look(none, 1'100'000, pass_number(0)).empty());
    CHECK(reads == 1);
    reports.misses = 4;
    for (uint64_t pass = 1; pass < LossReports::kMissesPeriodPasses; ++pass)
        CHECK(reports.look(none, 1'200'000 + pass, pass_number(pass)).empty());
    CHECK(reads == 1); // not due
    // A flush asked for: read now. The runs were skipped after the reading
    // in pass 0, so after the pass before it began (900 µs), earlier than
    // the previous reading of the other counts.
    auto windows = reports.look(none, 8'000'000, pass_number(5, 1));
    CHECK(reads == 2);
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].loss.in_kernel == 4);
    CHECK(windows[0].from_ns == 880'000);
    CHECK(reports.ledger.losses().runs_skipped == 4);
    SECTION("the next reading is due at a multiple of the period")
    {
        reports.misses = 6;
        windows =
            reports.look(none, 8'500'000, pass_number(2 * LossReports::kMissesPeriodPasses, 1));
        CHECK(reads == 3);
        REQUIRE(windows.size() == 1);
        CHECK(windows[0].loss.in_kernel == 2);
    }
}

TEST_CASE("loss reports: records a lane took back are overwritten, reported before the claim "
          "they followed",
          "[loss-reports]")
{
    Reports reports(4'000'000);
    LossLedger &ledger = reports.ledger;
    SourceLosses counted;
    counted.overwritten = 12;
    auto windows = reports.look(counted, 5'000'000, pass_number(1, 0, 2'500'000));
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].loss.in_stream == 12);
    CHECK(windows[0].loss.in_kernel == 0);
    CHECK(windows[0].from_ns == 2'480'000); // the claim, earlier than the reading
    CHECK(windows[0].to_ns == windows[0].from_ns);
    CHECK(ledger.counters().lost_in_stream == 12);
    CHECK(ledger.overrun());
}

TEST_CASE("loss reports: given-up records where reserved, refusals after their reading",
          "[loss-reports]")
{
    LossLedger ledger;
    LossReports reports(ledger, 0);
    LossPlacement placement(kMargin, 500'000, 300'000);
    CHECK_FALSE(reports.given_up({}, placement));
    auto given_up = reports.given_up({3, 2'000'000}, placement);
    REQUIRE(given_up);
    CHECK(given_up->loss.in_kernel == 3);
    CHECK(given_up->from_ns == 1'980'000);
    CHECK(ledger.counters().lost_in_kernel == 3);

    CHECK_FALSE(reports.refusals(0, 1'000'000, placement));
    auto refused = reports.refusals(9, 6'000'000, placement);
    REQUIRE(refused);
    CHECK(refused->events == 9);
    CHECK(refused->report_ns == 980'000); // after the reading at 1 ms
    CHECK(ledger.counters().lost_in_stream == 9);
    CHECK_FALSE(reports.refusals(9, 7'000'000, placement));
}
