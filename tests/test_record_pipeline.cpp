// The stages between the merge and the store, together, on synthetic
// records: what each kind of record becomes (stored as it is, rewritten,
// skipped, refused and counted), and that a process is followed by every
// lifecycle record, delivered or not, once.
#include <catch2/catch.hpp>

#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <sys/syscall.h>
#include <trace.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "stages/record_pipeline.hpp"
#include "util/clock.hpp"
#include "util/library_threads.hpp"

using posixtrace::Delivery;
using posixtrace::FilterHistory;
using posixtrace::ProcessProbes;
using posixtrace::RecordPipeline;
using posixtrace::StreamUserEvents;

namespace {

// Pids no process has: the numberings never read a process's memory.
constexpr pid_t kPrimary = 4194301;
constexpr pid_t kOther = 4194302;
constexpr uint32_t kPrimaryImage = 1, kOtherImage = 2;

// A record and its data, laid out as the merge hands them over: the data
// right after the header, and nothing after the data.
class Record {
public:
    Record(uint32_t id, uint64_t stamp, pid_t pid, const void *data = nullptr, size_t size = 0)
        : bytes_(sizeof(pt_record) + size)
    {
        pt_record header{};
        header.event_id = id;
        header.timestamp_ns = stamp;
        header.pid = uint32_t(pid);
        header.tid = uint32_t(pid);
        header.data_len = uint32_t(size);
        header.image = pid == kOther ? kOtherImage : kPrimaryImage;
        std::memcpy(bytes_.data(), &header, sizeof header);
        if (size)
            std::memcpy(bytes_.data() + sizeof header, data, size);
    }
    pt_record &header() { return *reinterpret_cast<pt_record *>(bytes_.data()); }
    Record &&from_thread(pid_t tid) &&
    {
        header().tid = uint32_t(tid);
        return std::move(*this);
    }
    const uint8_t *data() { return header().data; }

private:
    std::vector<uint8_t> bytes_;
};

struct SeenProbes final : ProcessProbes {
    int refresh(pid_t pid) override
    {
        refreshed.push_back(pid);
        return 0;
    }
    void forget(pid_t pid) override { forgotten.push_back(pid); }
    std::vector<pid_t> refreshed, forgotten;
};

struct Pipeline {
    explicit Pipeline(pid_t creator = kPrimary)
        : user_events(
              kPrimary, [](pid_t pid) { return pid == kOther ? kOtherImage : kPrimaryImage; },
              nullptr),
          stages(creator, user_events, filters)
    {
        user_events.set_primary_image(kPrimaryImage);
    }
    void deliver(Record &record, Delivery &out)
    {
        stages.deliver(record.header(), record.data(), &probes, out);
    }
    Delivery::Action action_of(Record record)
    {
        Delivery out;
        deliver(record, out);
        return out.action;
    }
    void name(pid_t pid, trace_event_id_t id, const std::string &text)
    {
        pt_user_name name{};
        name.event_id = id;
        name.length = uint32_t(text.size());
        std::memcpy(name.name, text.data(), text.size());
        Record record(PT_EVENT_USER_NAME, 1, pid, &name, sizeof name);
        Delivery out;
        deliver(record, out);
    }

    FilterHistory filters;
    StreamUserEvents user_events;
    RecordPipeline stages;
    SeenProbes probes;
};

pt_td_data about_thread(pid_t tid, uint64_t value = 0)
{
    pt_td_data about{};
    about.tid = tid;
    about.value = value;
    return about;
}

// What a delivery stores as the record's data.
template <class Data> Data stored_data(const Delivery &delivery)
{
    Data data;
    std::memcpy(&data, delivery.data, sizeof data);
    return data;
}

trace_event_set_t set_of(trace_event_id_t id)
{
    trace_event_set_t set;
    posix_trace_eventset_empty(&set);
    posix_trace_eventset_add(id, &set);
    return set;
}

} // namespace

TEST_CASE("record pipeline: a lifecycle record is followed once, delivered, refused or dropped",
          "[pipeline]")
{
    Pipeline pipeline;
    Record exec(PT_EVENT_PROCESS_EXEC, 100, kOther);
    Delivery delivered;
    pipeline.deliver(exec, delivered);
    CHECK(delivered.action == Delivery::Action::Store);
    CHECK(pipeline.probes.refreshed == std::vector<pid_t>{kOther});

    // Refused by an UNTIL_FULL restart after it: followed once, one event lost.
    pipeline.stages.cut_offs().accept_after(200);
    Record refused(PT_EVENT_PROCESS_EXEC, 150, kOther);
    Delivery refusal;
    pipeline.deliver(refused, refusal);
    CHECK(refusal.action == Delivery::Action::Refuse);
    CHECK(refusal.refused_events == 1);
    CHECK(pipeline.probes.refreshed == std::vector<pid_t>{kOther, kOther});

    // A notice is followed and is no event; dropped late, an exit still forgets.
    Record notice(PT_EVENT_LINK_MAP_CHANGED, 300, kOther);
    notice.header().flags |= PT_RECORD_NOTICE_ONLY;
    Delivery skipped;
    pipeline.deliver(notice, skipped);
    CHECK(skipped.action == Delivery::Action::Skip);
    CHECK(pipeline.probes.refreshed.size() == 3);
    Record exit(PT_EVENT_PROCESS_EXIT, 400, kOther);
    CHECK(pipeline.stages.drop(exit.header(), &pipeline.probes) == 1);
    CHECK(pipeline.probes.forgotten == std::vector<pid_t>{kOther});

    // Without probes (a stream shut down) nothing is asked of them.
    Record late_exec(PT_EVENT_PROCESS_EXEC, 500, kOther);
    Delivery unfollowed;
    pipeline.stages.deliver(late_exec.header(), late_exec.data(), nullptr, unfollowed);
    CHECK(pipeline.probes.refreshed.size() == 3);
}

TEST_CASE("record pipeline: a fork record too short to name its child is not read past",
          "[pipeline]")
{
    Pipeline pipeline;
    uint8_t short_data[8] = {}; // the kernel's hold the child at 4, its image after 12
    Record fork(PT_EVENT_PROCESS_FORK, 100, kPrimary, short_data, sizeof short_data);
    Delivery out;
    pipeline.deliver(fork, out);
    CHECK(out.action == Delivery::Action::Store);
    CHECK(out.header->data_len == sizeof short_data);
}

TEST_CASE("record pipeline: cleared records are skipped, refused ones counted with what they "
          "stand for",
          "[pipeline]")
{
    Pipeline pipeline;
    pipeline.stages.cut_offs().clear_before(100);
    pipeline.stages.cut_offs().accept_after(200);
    Record cleared(POSIX_TRACE_USDT_EVENT_FIRST, 50, kPrimary);
    Delivery out;
    pipeline.deliver(cleared, out);
    CHECK(out.action == Delivery::Action::Skip);
    CHECK(pipeline.stages.drop(cleared.header(), &pipeline.probes) == 0);

    posix_trace_overflow_data hid{3, 3, 0};
    Record report(POSIX_TRACE_OVERFLOW, 150, kPrimary, &hid, sizeof hid);
    Delivery refused;
    pipeline.deliver(report, refused);
    CHECK(refused.action == Delivery::Action::Refuse);
    CHECK(refused.refused_events == 3);

    Record kept(POSIX_TRACE_USDT_EVENT_FIRST, 250, kPrimary);
    Delivery stored;
    pipeline.deliver(kept, stored);
    CHECK(stored.action == Delivery::Action::Store);
    CHECK(stored.header->event_id == POSIX_TRACE_USDT_EVENT_FIRST);
    CHECK(stored.header == &kept.header()); // stored as it came: no copy
}

TEST_CASE("record pipeline: a thread report counts the wakeup it hid, and a resume follows it",
          "[pipeline]")
{
    Pipeline pipeline;
    pt_td_data sleeper = about_thread(7);
    REQUIRE(pipeline.action_of(Record(POSIX_TRACE_TD_EVENT_ID(PT_TD_SLEEP), 10, kPrimary, &sleeper,
                                      sizeof sleeper)) == Delivery::Action::Store);

    posix_trace_overflow_data hid{2, 2, 0};
    Record report = Record(POSIX_TRACE_OVERFLOW, 20, kPrimary, &hid, sizeof hid).from_thread(7);
    Delivery counted;
    pipeline.deliver(report, counted);
    REQUIRE(counted.action == Delivery::Action::Store);
    auto stored = stored_data<posix_trace_overflow_data>(counted);
    CHECK(stored.lost == 3);
    CHECK(stored.lost_in_kernel == 3);
    CHECK(counted.hidden_in_kernel == 3);
    CHECK(counted.resume_after);
    CHECK(counted.header->data_len == sizeof stored);
    // The record it came in is untouched.
    posix_trace_overflow_data original;
    std::memcpy(&original, report.data(), sizeof original);
    CHECK(original.lost == 2);

    SECTION("not once the resume is filtered, nor for a thread not seen asleep")
    {
        pipeline.filters.set_current(set_of(POSIX_TRACE_RESUME));
        Record again = Record(POSIX_TRACE_OVERFLOW, 30, kPrimary, &hid, sizeof hid).from_thread(7);
        Delivery uncounted;
        pipeline.deliver(again, uncounted);
        stored = stored_data<posix_trace_overflow_data>(uncounted);
        CHECK(stored.lost == 2);
        CHECK_FALSE(uncounted.resume_after);
    }
    SECTION("a report shorter than its layout is read as far as it goes, the rest zero")
    {
        uint64_t lost_only = 5;
        Record cut =
            Record(POSIX_TRACE_OVERFLOW, 30, kPrimary, &lost_only, sizeof lost_only).from_thread(8);
        Delivery short_report;
        pipeline.deliver(cut, short_report);
        REQUIRE(short_report.action == Delivery::Action::Store);
        stored = stored_data<posix_trace_overflow_data>(short_report);
        CHECK(stored.lost == 5);
        CHECK(stored.lost_in_kernel == 0);
        CHECK(short_report.header->data_len == sizeof stored);
    }
    SECTION("nor the sleep of a process whose thread agent is told")
    {
        pipeline.stages.agents().set(kPrimary, true);
        Record told_sleep(POSIX_TRACE_TD_EVENT_ID(PT_TD_SLEEP), 40, kPrimary, &sleeper,
                          sizeof sleeper);
        Delivery out;
        pipeline.deliver(told_sleep, out);
        Record told_report(POSIX_TRACE_OVERFLOW, 50, kPrimary, &hid, sizeof hid);
        told_report.header().tid = 7;
        Delivery reported;
        pipeline.deliver(told_report, reported);
        stored = stored_data<posix_trace_overflow_data>(reported);
        CHECK(stored.lost == 2);
    }
}

TEST_CASE("record pipeline: an exec'd image's user events are renumbered by name and judged by "
          "the filter at their stamp",
          "[pipeline]")
{
    Pipeline pipeline;
    trace_event_id_t ours = POSIX_TRACE_USER_EVENT_FIRST + 1;
    trace_event_id_t theirs = POSIX_TRACE_USER_EVENT_FIRST + 5;
    pipeline.name(kPrimary, ours, "request");
    Record exec(PT_EVENT_PROCESS_EXEC, 2, kOther);
    Delivery execed;
    pipeline.deliver(exec, execed);
    pipeline.name(kOther, theirs, "request");

    Record before(theirs, 1500, kOther);
    Delivery renumbered;
    pipeline.deliver(before, renumbered);
    REQUIRE(renumbered.action == Delivery::Action::Store);
    CHECK(renumbered.header->event_id == ours);
    CHECK(before.header().event_id == theirs);

    // "request" filtered from 2000 on: the kernel let the other image's
    // event through by its own id; the stream drops it by the stream's.
    trace_event_set_t unfiltered = pipeline.filters.current();
    pipeline.filters.set_current(set_of(ours));
    pipeline.filters.took_effect(unfiltered, 2000);
    Record after(theirs, 2500, kOther);
    Delivery filtered;
    pipeline.deliver(after, filtered);
    CHECK(filtered.action == Delivery::Action::Skip);
    Record judged_before(theirs, 1900, kOther);
    Delivery kept;
    pipeline.deliver(judged_before, kept);
    CHECK(kept.action == Delivery::Action::Store);
    // The stream's own numbering was judged by the kernel already.
    Record own(ours, 2500, kPrimary);
    Delivery own_kept;
    pipeline.deliver(own, own_kept);
    CHECK(own_kept.action == Delivery::Action::Store);
    CHECK(pipeline.stages.user_ids().keeps_id(own.header()));
    CHECK_FALSE(pipeline.stages.user_ids().keeps_id(after.header()));
}

TEST_CASE("record pipeline: the library's own threads are hidden, and td_concurrency counts "
          "without them",
          "[pipeline]")
{
    std::atomic<pid_t> library_tid{0};
    auto thread = posixtrace::LibraryThreads::start("pt-pipeline", [&](std::stop_token stop) {
        library_tid = pid_t(syscall(SYS_gettid));
        while (!stop.stop_requested())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (!library_tid)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    pid_t self = getpid();
    Pipeline pipeline(self);
    pipeline.stages.refresh();
    uint64_t now = posixtrace::clock_nanos(CLOCK_MONOTONIC);

    pid_t library = library_tid.load();
    CHECK(
        pipeline.action_of(Record(POSIX_TRACE_USDT_EVENT_FIRST, now, self).from_thread(library)) ==
        Delivery::Action::Skip);
    // A user event is the application's, whatever thread once had its tid.
    CHECK(
        pipeline.action_of(Record(POSIX_TRACE_USER_EVENT_FIRST, now, self).from_thread(library)) ==
        Delivery::Action::Store);

    pt_td_data threads = about_thread(self, 5);
    Record concurrency(POSIX_TRACE_TD_EVENT_ID(PT_TD_CONCURRENCY), now, self, &threads,
                       sizeof threads);
    Delivery corrected;
    pipeline.deliver(concurrency, corrected);
    REQUIRE(corrected.action == Delivery::Action::Store);
    auto counted = stored_data<pt_td_data>(corrected);
    CHECK(counted.value == 4);

    // Another process's threads are its own.
    CHECK(pipeline.action_of(
              Record(POSIX_TRACE_USDT_EVENT_FIRST, now, kOther).from_thread(library)) ==
          Delivery::Action::Store);
    thread.request_stop();
    thread.join();
}
