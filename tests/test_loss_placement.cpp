// Where the losses of a full kernel ring are reported: where their run
// began, so an overflow event sits in the gap it explains, not before events
// recorded ahead of the loss.
#include "lanes_support.hpp"
#include "recording_support.hpp"

#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <sched.h>
#include <trace.h>

#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "sources/kernel/loss_notices.hpp"

namespace {

using namespace recording_support;
using posixtrace::LossNotices;
using posixtrace::PlacedLoss;
using lanes_support::DrainBehindChild;

} // namespace

TEST_CASE("recording: a full kernel ring's losses are reported where they began", "[recording]")
{
    test_support::ChildConversation child({helper_path("tick_bursts")});
    REQUIRE(child.read_line() == "ready\n");
    Attr attr;
    // kernel rings of 256 KiB (about 1,100 ticks), a stream that holds 4 of them;
    // not LOOP, whose events go to loop rings that overwrite (test_by_pid.cpp)
    REQUIRE(posix_trace_attr_setstreamsize(attr.get(), 512 * 1024) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(attr.get(), POSIX_TRACE_UNTIL_FULL) == 0);
    trace_id_t trid = 0;
    REQUIRE(posix_trace_create(child.pid(), attr.get(), &trid) == 0);
    StreamGuard stream(trid);
    filter_thread_events(trid);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(trid, "ticks:tick", &attached) == 0);
    REQUIRE(attached == 1);
    {
        DrainBehindChild starved(child.pid());
        REQUIRE(posix_trace_start(trid) == 0);
        // 4 bursts of 3,000 ticks on CPU 0, 20 ms apart: each fills the ring
        child.say("0 4 3000 20000\n");
        REQUIRE(child.read_line() == "done\n");
        REQUIRE(posix_trace_stop(trid) == 0);
    }

    std::vector<Event> events = read_everything(trid);
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(trid, &counters) == 0);
    CHECK(counters.lost_in_stream == 0); // every tick missing is the kernel ring's

    // Between two ticks read, exactly the losses of the ticks missing
    // between them are reported. Stamped at the drain's previous look at
    // the counts instead, a burst's report came in the gap before it.
    constexpr uint64_t kTicks = 4 * 3000;
    uint64_t next = 0, reported_here = 0, reported = 0, gaps = 0;
    std::deque<uint64_t> windows_from; // each open window's overflow stamp
    size_t windows = 0;
    for (const Event &event : events) {
        uint64_t at_ns = uint64_t(event.info.posix_timestamp.tv_sec) * 1'000'000'000u +
                         uint64_t(event.info.posix_timestamp.tv_nsec);
        if (event.info.posix_event_id == POSIX_TRACE_RESUME) {
            // every overflow event has its resume, at or after it
            REQUIRE(!windows_from.empty());
            CHECK(at_ns >= windows_from.front());
            windows_from.pop_front();
            ++windows;
        }
        if (event.info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            windows_from.push_back(at_ns);
            posix_trace_overflow_data loss{};
            REQUIRE(event.data.size() == sizeof loss);
            std::memcpy(&loss, event.data.data(), sizeof loss);
            reported_here += loss.lost;
            reported += loss.lost;
        } else if (event.info.posix_event_id >= POSIX_TRACE_USDT_EVENT_FIRST) {
            uint64_t number = payload_as<uint64_t>(event.data);
            REQUIRE(number >= next);
            INFO("before tick " << number << ", after tick " << int64_t(next) - 1);
            CHECK(reported_here == number - next);
            gaps += number > next;
            reported_here = 0;
            next = number + 1;
        }
    }
    CHECK(windows_from.empty());
    CHECK(windows >= 3);
    INFO("after the last tick, " << int64_t(next) - 1);
    CHECK(reported_here == kTicks - next);
    CHECK(gaps + (next < kTicks) >= 3); // the first burst may have filled the ring only at its end
    CHECK(counters.lost_in_kernel == reported);
}

// The attribution alone, from notices written here: each loss is placed
// after the latest notice at or before its count, whatever order the
// notices came in, and a notice ahead of the counts waits for them.
TEST_CASE("recording: losses placed by their runs' notices", "[recording]")
{
    LossNotices notices(-1, 2); // no ring: only the notices given here
    auto place = [&](std::vector<uint64_t> counts) {
        std::vector<PlacedLoss> placed;
        notices.place(counts, placed);
        std::vector<std::pair<uint64_t, uint64_t>> pairs;
        for (const PlacedLoss &loss : placed)
            pairs.emplace_back(loss.after_ns, loss.count);
        return pairs;
    };
    using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;
    CHECK(place({3, 0}) == Pairs{{0, 3}}); // counted before any notice: unknown start
    // interrupted on CPU 0: the later notice came first
    notices.take_notice({500, 5, 0, 0});
    notices.take_notice({400, 3, 0, 0});
    notices.take_notice({700, 9, 1, 0}); // CPU 1, not counted yet
    CHECK(place({7, 0}) == Pairs{{400, 2}, {500, 2}});
    CHECK(place({8, 0}) == Pairs{{500, 1}}); // the run goes on
    CHECK(place({8, 12}) == Pairs{{0, 9}, {700, 3}});
    // a notice earlier than one used already never moves a loss earlier
    notices.take_notice({450, 10, 0, 0});
    CHECK(place({11, 12}) == Pairs{{500, 2}, {500, 1}});
    notices.take_notice({300, 99, 7, 0}); // no such CPU
    CHECK(place({11, 12}).empty());

    // A process that fills and empties a ring again and again: the notices
    // kept waiting are bounded, the oldest go, and every loss is still
    // placed, never after its own notice.
    for (uint64_t i = 0; i < 5000; ++i)
        notices.take_notice({1000 + i, 100 + i, 1, 0});
    std::vector<std::pair<uint64_t, uint64_t>> flood = place({11, 5100});
    CHECK(flood.size() <= 16384 / sizeof(pt_loss_notice) + 1);
    uint64_t placed = 0;
    for (const auto &[after_ns, count] : flood)
        placed += count;
    CHECK(placed == 5100 - 12);
    CHECK(flood.back() == std::pair<uint64_t, uint64_t>{5999, 1}); // the last run, at its start
}
