// The stages a record passes on its way to the store, alone, on synthetic
// records: its kind, decided once; the cut-offs of clear and of an
// UNTIL_FULL restart; the wakeups the kernel hid with a switch-in.
#include <catch2/catch.hpp>

#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <trace.h>

#include "stages/cut_offs.hpp"
#include "stages/filter_history.hpp"
#include "stages/hidden_wakeups.hpp"
#include "stages/record_kind.hpp"

using posixtrace::classify;
using posixtrace::CutOffs;
using posixtrace::HiddenWakeups;
using posixtrace::RecordKind;

namespace {

pt_record record_of(uint32_t id, uint64_t stamp = 0, uint16_t cpu = 0, uint32_t tid = 0)
{
    pt_record record{};
    record.event_id = id;
    record.timestamp_ns = stamp;
    record.cpu = cpu;
    record.tid = tid;
    return record;
}

uint32_t td_event(uint32_t td)
{
    return POSIX_TRACE_TD_EVENT_ID(td);
}

} // namespace

TEST_CASE("record kinds: each record is classified once, by id and by who made it")
{
    CHECK(classify(record_of(PT_EVENT_PROCESS_FORK)) == RecordKind::Lifecycle);
    CHECK(classify(record_of(PT_EVENT_PROCESS_EXEC)) == RecordKind::Lifecycle);
    CHECK(classify(record_of(PT_EVENT_PROCESS_EXIT)) == RecordKind::Lifecycle);
    CHECK(classify(record_of(PT_EVENT_LINK_MAP_CHANGED)) == RecordKind::Lifecycle);
    CHECK(classify(record_of(PT_EVENT_USER_NAME)) == RecordKind::Lifecycle);
    CHECK(classify(record_of(POSIX_TRACE_USER_EVENT_FIRST)) == RecordKind::UserEvent);
    CHECK(classify(record_of(POSIX_TRACE_USDT_EVENT_FIRST - 1)) == RecordKind::UserEvent);
    CHECK(classify(record_of(POSIX_TRACE_USDT_EVENT_FIRST)) == RecordKind::Other);
    CHECK(classify(record_of(td_event(PT_TD_SLEEP))) == RecordKind::ThreadEvent);
    CHECK(classify(record_of(POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT)) ==
          RecordKind::Other);
    CHECK(classify(record_of(POSIX_TRACE_OVERFLOW)) == RecordKind::ThreadReport);
    // What the stream itself made (cpu PT_CPU_SYSTEM) is no thread's nor user's.
    CHECK(classify(record_of(POSIX_TRACE_OVERFLOW, 0, PT_CPU_SYSTEM)) == RecordKind::Other);
    CHECK(classify(record_of(POSIX_TRACE_USER_EVENT_FIRST, 0, PT_CPU_SYSTEM)) == RecordKind::Other);
    CHECK(classify(record_of(td_event(PT_TD_SLEEP), 0, PT_CPU_SYSTEM)) == RecordKind::Other);
}

TEST_CASE("cut-offs: cleared before a clear, refused before a restart, kept after both")
{
    CutOffs cut_offs;
    CHECK(cut_offs.of(0) == CutOffs::Verdict::Keep);
    cut_offs.clear_before(100);
    cut_offs.accept_after(200);
    CHECK(cut_offs.of(99) == CutOffs::Verdict::Cleared);
    CHECK(cut_offs.cleared(99));
    CHECK(cut_offs.of(100) == CutOffs::Verdict::Refused);
    CHECK(cut_offs.of(199) == CutOffs::Verdict::Refused);
    CHECK(cut_offs.of(200) == CutOffs::Verdict::Keep);
    CHECK_FALSE(cut_offs.cleared(200));
}

TEST_CASE("hidden wakeups: a sleeper found running was woken unseen, once")
{
    HiddenWakeups wakeups;
    pt_td_data sleeper{};
    sleeper.tid = 42;
    wakeups.track(record_of(td_event(PT_TD_SLEEP), 1000), sleeper);
    pt_record report = record_of(POSIX_TRACE_OVERFLOW, 2000, 0, 42);
    CHECK(wakeups.woken_unseen(report));
    CHECK_FALSE(wakeups.woken_unseen(report)); // settled by the first report
}

TEST_CASE("hidden wakeups: a wakeup or a switch-in seen settles the sleep")
{
    pt_td_data sleeper{};
    sleeper.tid = 7;
    for (uint32_t seen : {PT_TD_READY, PT_TD_SWITCHTO, PT_TD_DEATH}) {
        HiddenWakeups wakeups;
        wakeups.track(record_of(td_event(PT_TD_SLEEP), 10), sleeper);
        wakeups.track(record_of(td_event(seen), 20), sleeper);
        CHECK_FALSE(wakeups.woken_unseen(record_of(POSIX_TRACE_OVERFLOW, 30, 0, 7)));
    }
}

TEST_CASE("hidden wakeups: not across a gap in recording, nor after forget_all")
{
    pt_td_data sleeper{};
    sleeper.tid = 9;
    HiddenWakeups wakeups;
    wakeups.track(record_of(td_event(PT_TD_SLEEP), 10), sleeper);
    wakeups.distrust_until(15); // a stop, a filter change, a loss
    CHECK_FALSE(wakeups.woken_unseen(record_of(POSIX_TRACE_OVERFLOW, 30, 0, 9)));
    wakeups.track(record_of(td_event(PT_TD_SLEEP), 40), sleeper);
    wakeups.forget_all();
    CHECK_FALSE(wakeups.woken_unseen(record_of(POSIX_TRACE_OVERFLOW, 50, 0, 9)));
}

TEST_CASE("filter history: a record is judged by the filter in force at its stamp")
{
    const trace_event_id_t a = POSIX_TRACE_USER_EVENT_FIRST, b = a + 1;
    trace_event_set_t none, only_a, only_b;
    posix_trace_eventset_empty(&none);
    posix_trace_eventset_empty(&only_a);
    posix_trace_eventset_add(a, &only_a);
    posix_trace_eventset_empty(&only_b);
    posix_trace_eventset_add(b, &only_b);

    posixtrace::FilterHistory filters;
    CHECK_FALSE(filters.filtered_at(a, 5)); // nothing set: nothing filtered
    filters.set_current(only_a);
    filters.took_effect(none, 100);
    filters.set_current(only_b);
    filters.took_effect(only_a, 200);
    CHECK(filters.filters(b));
    CHECK_FALSE(filters.filters(a));
    CHECK_FALSE(filters.filtered_at(a, 99)); // before any change: the first filter
    CHECK(filters.filtered_at(a, 100));
    CHECK_FALSE(filters.filtered_at(b, 150));
    CHECK(filters.filtered_at(b, 200));
    CHECK_FALSE(filters.filtered_at(a, 250));

    filters.forget_before(150); // nothing stamped before 150 can come
    CHECK(filters.filtered_at(a, 150));
    CHECK(filters.filtered_at(b, 300));
    filters.forget_before(300); // the history ends: the filter of now
    CHECK(filters.filtered_at(b, 10));
    CHECK_FALSE(filters.filtered_at(a, 10));
}

TEST_CASE("filter history: a filter tried and taken back leaves no trace")
{
    const trace_event_id_t a = POSIX_TRACE_USER_EVENT_FIRST;
    trace_event_set_t none, only_a;
    posix_trace_eventset_empty(&none);
    posix_trace_eventset_empty(&only_a);
    posix_trace_eventset_add(a, &only_a);

    posixtrace::FilterHistory filters;
    filters.set_current(only_a);
    filters.set_current(none); // the kernel refused what it needed
    CHECK_FALSE(filters.filters(a));
    CHECK_FALSE(filters.filtered_at(a, 0));
    CHECK_FALSE(filters.filtered_at(a, UINT64_MAX));
}
