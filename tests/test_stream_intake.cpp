// A merged record's way into the store (StreamIntake) under each stream full
// policy, with a stream owner that only notes what it is asked: no root, no
// stream, no kernel.
#include <catch2/catch.hpp>

#include <posix_trace/events.h>
#include <trace.h>

#include <cstring>
#include <vector>

#include "store_support.hpp"
#include "stream/stream_intake.hpp"

using namespace posixtrace;

namespace {

constexpr pid_t kTarget = 4194301; // no process has it: nothing reads its memory
constexpr int64_t kRealtimeOffset = 1'000'000;

struct NotingOwner final : StreamIntake::Owner {
    void stop_recording_while_full() override
    {
        ++stops;
        phase_now = StreamPhase::StoppedFull;
    }
    void flush_to_log(uint64_t timestamp_ns) override
    {
        flushes.push_back(timestamp_ns);
        while (!store->empty()) // the log takes everything
            take_oldest(*store);
    }
    pt_record system_record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const override
    {
        return system_record_of(id, timestamp_ns, size);
    }

    StreamPhase phase_now = StreamPhase::Running;
    StreamStore *store = nullptr;
    int stops = 0;
    std::vector<uint64_t> flushes;
};

// A stream of `policy`, room for about `events` events of 64 bytes.
struct Intake {
    Intake(int policy, size_t events)
        : store(events * stored_event_size(64), policy, kRealtimeOffset),
          full_policy(FullPolicy::make(policy)),
          user_events(
              kTarget, [](pid_t) { return uint32_t(1); }, nullptr),
          pipeline(kTarget, user_events, filters),
          intake(store, *full_policy, pipeline, ledger, filters, owner.phase_now, owner)
    {
        user_events.set_primary_image(1);
        owner.store = &store;
    }
    // An event of 64 bytes stamped `stamp` (CLOCK_MONOTONIC), past the stages.
    void store_event(uint64_t stamp)
    {
        pt_record record{};
        record.event_id = POSIX_TRACE_UNNAMED_USEREVENT;
        record.timestamp_ns = stamp;
        record.pid = uint32_t(kTarget);
        record.data_len = 64;
        uint8_t data[64] = {};
        intake.store(record, data);
    }
    std::vector<pt_record> read_all()
    {
        std::vector<pt_record> read;
        while (!store.empty()) {
            read.push_back(oldest_of(store));
            take_oldest(store);
        }
        return read;
    }

    StreamStore store;
    std::unique_ptr<FullPolicy> full_policy;
    FilterHistory filters;
    StreamUserEvents user_events;
    RecordPipeline pipeline;
    LossLedger ledger;
    NotingOwner owner;
    StreamIntake intake;
};

} // namespace

TEST_CASE("stream intake: UNTIL_FULL stops once, its stop event last, the rest refused",
          "[stream-intake]")
{
    Intake stream(POSIX_TRACE_UNTIL_FULL, 100);
    uint64_t stamp = 1;
    for (; stream.owner.stops == 0 && stamp < 1000; ++stamp)
        stream.store_event(stamp);
    REQUIRE(stream.owner.stops == 1);
    uint64_t first_refused = stamp - 1;
    for (int i = 0; i < 10; ++i)
        stream.store_event(stamp++);
    CHECK(stream.owner.stops == 1); // refused as it stays stopped
    CHECK(stream.store.full());
    CHECK(stream.ledger.overrun());
    std::vector<pt_record> read = stream.read_all();
    REQUIRE(read.size() >= 2);
    CHECK(read.back().event_id == POSIX_TRACE_STOP);
    CHECK(read.back().timestamp_ns == first_refused + kRealtimeOffset);
    CHECK(read.front().timestamp_ns == 1 + kRealtimeOffset); // the oldest kept
    CHECK(stream.ledger.counters().recorded == read.size());
    CHECK(stream.ledger.losses().refused == 11);
}

TEST_CASE("stream intake: FLUSH hands everything to the log, then stores", "[stream-intake]")
{
    Intake stream(POSIX_TRACE_FLUSH, 100);
    for (uint64_t stamp = 1; stamp <= 250; ++stamp)
        stream.store_event(stamp);
    REQUIRE(stream.owner.flushes.size() == 2);
    CHECK(stream.owner.flushes[0] < stream.owner.flushes[1]);
    CHECK(stream.owner.stops == 0);
    std::vector<pt_record> read = stream.read_all();
    REQUIRE_FALSE(read.empty());
    CHECK(read.front().timestamp_ns == stream.owner.flushes[1] + kRealtimeOffset);
    CHECK(read.back().timestamp_ns == 250 + kRealtimeOffset);
    CHECK(stream.ledger.counters().recorded == 250);
    CHECK(stream.ledger.losses().refused == 0);
}

TEST_CASE("stream intake: LOOP overwrites the oldest, counted; and before a stamp",
          "[stream-intake]")
{
    Intake stream(POSIX_TRACE_LOOP, 100);
    for (uint64_t stamp = 1; stamp <= 300; ++stamp)
        stream.store_event(stamp);
    uint64_t overwritten = stream.ledger.losses().overwritten;
    CHECK(overwritten > 0);
    CHECK(stream.ledger.overrun());
    CHECK(stream.owner.stops == 0);
    stream.intake.overwrite_before(290); // a lane took back younger records
    CHECK(stream.ledger.losses().overwritten > overwritten);
    std::vector<pt_record> read = stream.read_all();
    REQUIRE_FALSE(read.empty());
    CHECK(read.front().timestamp_ns == 290 + kRealtimeOffset);
    CHECK(read.back().timestamp_ns == 300 + kRealtimeOffset);
    CHECK(stream.ledger.losses().overwritten + read.size() == 300);
}

TEST_CASE("stream intake: a record dropped on the way is counted and owed a report",
          "[stream-intake]")
{
    Intake stream(POSIX_TRACE_UNTIL_FULL, 100);
    pt_record late{};
    late.event_id = POSIX_TRACE_UNNAMED_USEREVENT;
    late.pid = uint32_t(kTarget);
    late.timestamp_ns = 5;
    stream.intake.drop_late(late, nullptr);
    stream.intake.note_loss(StreamLoss::Refused, 2);
    CHECK(stream.ledger.counters().lost_in_stream == 3);
    CHECK(stream.ledger.take_owed() == 3);
    CHECK(stream.store.empty());
}
