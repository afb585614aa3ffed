// When the drain thread makes its next pass (DrainSchedule): no root, no
// stream.
#include <catch2/catch.hpp>

#include "stream/drain_schedule.hpp"

using posixtrace::DrainSchedule;

namespace {

DrainSchedule::State recording()
{
    DrainSchedule::State state;
    state.recording = true;
    return state;
}

// Quiet passes until the schedule dozes; the first sleep that does.
DrainSchedule::Sleep quiet_until_dozing(DrainSchedule &schedule)
{
    for (uint64_t i = 0; i < DrainSchedule::kQuietPassesBeforeDozing; ++i) {
        DrainSchedule::Sleep sleep = schedule.next(recording());
        REQUIRE(sleep.ns == DrainSchedule::kPeriodNs);
        REQUIRE_FALSE(sleep.starts_dozing);
        schedule.pass_done(false, 0);
    }
    return schedule.next(recording());
}

} // namespace

TEST_CASE("drain schedule: at once while behind, briefly for a flush, a period while recording, "
          "woken only otherwise",
          "[drain-schedule]")
{
    DrainSchedule schedule;
    DrainSchedule::State state = recording();
    state.merge_behind = true;
    state.flush_waiting = true;
    CHECK(schedule.next(state).ns == 0u);
    state.merge_behind = false;
    CHECK(schedule.next(state).ns == DrainSchedule::kFlushRetryNs);
    CHECK(schedule.next(recording()).ns == DrainSchedule::kPeriodNs);
    CHECK_FALSE(schedule.next(DrainSchedule::State{}).ns);
    DrainSchedule::State waiting;
    waiting.work_waiting = true; // a suspended stream with system events to deliver
    CHECK(schedule.next(waiting).ns == DrainSchedule::kPeriodNs);
}

TEST_CASE("drain schedule: dozes after quiet passes, tells the sources once, and any news ends it",
          "[drain-schedule]")
{
    DrainSchedule schedule;
    DrainSchedule::Sleep sleep = quiet_until_dozing(schedule);
    CHECK(sleep.ns == DrainSchedule::kDozingPeriodNs);
    CHECK(sleep.starts_dozing);
    schedule.pass_done(false, 0);
    sleep = schedule.next(recording());
    CHECK(sleep.ns == DrainSchedule::kDozingPeriodNs);
    CHECK_FALSE(sleep.starts_dozing); // told already

    SECTION("a pass that found news")
    {
        schedule.pass_done(true, 0);
        CHECK(schedule.next(recording()).ns == DrainSchedule::kPeriodNs);
        CHECK(quiet_until_dozing(schedule).starts_dozing); // told again next time
    }
    SECTION("work waiting keeps the period, and the sources are told again after")
    {
        DrainSchedule::State waiting = recording();
        waiting.work_waiting = true;
        CHECK(schedule.next(waiting).ns == DrainSchedule::kPeriodNs);
        sleep = schedule.next(recording());
        CHECK(sleep.ns == DrainSchedule::kDozingPeriodNs);
        CHECK(sleep.starts_dozing);
    }
    SECTION("a flush or a merge behind does not end the doze")
    {
        DrainSchedule::State flushing = recording();
        flushing.flush_waiting = true;
        CHECK(schedule.next(flushing).ns == DrainSchedule::kFlushRetryNs);
        CHECK_FALSE(schedule.next(recording()).starts_dozing);
    }
}

// A pass that looks at many idle rings is long where memory is slow: the
// doze lengthens so that such passes take a fortieth of a CPU at most, and
// never past the longest doze, however long a pass.
TEST_CASE("drain schedule: a doze lengthens with the passes it separates", "[drain-schedule]")
{
    DrainSchedule schedule;
    quiet_until_dozing(schedule);
    schedule.pass_done(false, 50'000); // a few rings: the shortest doze
    CHECK(schedule.next(recording()).ns == DrainSchedule::kDozingPeriodNs);
    schedule.pass_done(false, 600'000); // a thousand lanes
    CHECK(schedule.next(recording()).ns == 600'000 * DrainSchedule::kDozeToPassRatio);
    schedule.pass_done(false, 10'000'000);
    CHECK(schedule.next(recording()).ns == DrainSchedule::kLongestDozeNs);
    schedule.pass_done(true, 10'000'000); // news: the period again
    CHECK(schedule.next(recording()).ns == DrainSchedule::kPeriodNs);
}
