// The readers' side of a stream's store (StoreReader), alone: what getnext
// is handed in which order, and the eventfd readers wait on. Synthetic
// records; no root, no stream.
#include <catch2/catch.hpp>

#include <poll.h>

#include <posix_trace/events.h>

#include <cstring>
#include <vector>

#include "events/event_set.hpp"
#include "stream/store_reader.hpp"
#include "util/clock.hpp"

using posixtrace::FilterHistory;
using posixtrace::FullPolicy;
using posixtrace::LossLedger;
using posixtrace::StoreReader;
using posixtrace::StreamPhase;
using posixtrace::StreamStore;
using Read = StoreReader::Read;

namespace {

constexpr uint32_t kUserEvent = POSIX_TRACE_USER_EVENT_FIRST;
constexpr size_t kPayload = 16;
const size_t kEventBytes = posixtrace::stored_event_size(kPayload);

// A store, its reader and what the reader needs, as a stream holds them.
struct Fixture {
    explicit Fixture(size_t events, int policy)
        : store(events * kEventBytes, policy), full_policy(FullPolicy::make(policy)),
          queue(4242, filters), reader(store, ledger, filters, queue)
    {
    }

    // Events stamped `first`, `first` + 1, ... through the full policy, as
    // the intake offers them; what LOOP overwrote is taken, as it does.
    void offer(int events, uint64_t first)
    {
        for (int i = 0; i < events; ++i) {
            pt_record record{};
            record.event_id = kUserEvent;
            record.timestamp_ns = first + uint64_t(i);
            record.data_len = kPayload;
            uint8_t data[kPayload];
            std::memset(data, i, sizeof data);
            if (full_policy->make_room(store, record, kEventBytes, StreamPhase::Running) ==
                    FullPolicy::Decision::Store &&
                store.fits(kEventBytes))
                store.push(record, data);
        }
        store.take_overwritten();
    }

    struct Got {
        Read read;
        trace_event_id_t id = 0;
        uint64_t stamp_ns = 0;
        std::vector<uint8_t> data;
    };
    Got next()
    {
        posix_trace_event_info info{};
        std::vector<uint8_t> data(64);
        size_t len = 0;
        Read read = reader.read({&info, data.data(), data.size(), &len});
        data.resize(read == Read::Nothing ? 0 : len);
        return {read, info.posix_event_id, posixtrace::to_nanos(info.posix_timestamp),
                std::move(data)};
    }

    bool readable() const
    {
        pollfd fd{reader.readable_fd(), POLLIN, 0};
        return poll(&fd, 1, 0) == 1;
    }

    StreamStore store;
    std::unique_ptr<FullPolicy> full_policy;
    LossLedger ledger;
    FilterHistory filters;
    posixtrace::SystemEventQueue queue;
    StoreReader reader;
};

} // namespace

TEST_CASE("store reader: the events in order, then nothing; the eventfd says which",
          "[store-reader]")
{
    Fixture f(8, POSIX_TRACE_UNTIL_FULL);
    REQUIRE(f.reader.valid());
    f.reader.update_readable(false);
    CHECK_FALSE(f.readable());
    f.offer(3, 100);
    f.reader.update_readable(false);
    CHECK(f.readable());
    for (uint64_t stamp = 100; stamp < 103; ++stamp) {
        Fixture::Got got = f.next();
        REQUIRE(got.read == Read::Event);
        CHECK(got.id == kUserEvent);
        CHECK(got.stamp_ns == stamp);
        CHECK(got.data.size() == kPayload);
        CHECK(got.data[0] == uint8_t(stamp - 100));
    }
    CHECK(f.next().read == Read::Nothing);
    f.reader.update_readable(false);
    CHECK_FALSE(f.readable());
    f.reader.update_readable(true); // shut down: getnext answers at once
    CHECK(f.readable());
    CHECK(f.ledger.counters().recorded == 0); // the intake counts the events
}

TEST_CASE("store reader: LOOP's overflow and resume events come first, counted recorded",
          "[store-reader]")
{
    Fixture f(3, POSIX_TRACE_LOOP);
    f.offer(5, 1); // 1 and 2 overwritten
    f.reader.update_readable(false);
    CHECK(f.readable());
    Fixture::Got overflow = f.next();
    REQUIRE(overflow.read == Read::Report);
    CHECK(overflow.id == POSIX_TRACE_OVERFLOW);
    posix_trace_overflow_data lost{};
    REQUIRE(overflow.data.size() == sizeof lost);
    std::memcpy(&lost, overflow.data.data(), sizeof lost);
    CHECK(lost.lost == 2);
    CHECK(lost.lost_in_stream == 2);
    CHECK(lost.lost_in_kernel == 0);
    Fixture::Got resume = f.next();
    REQUIRE(resume.read == Read::Report);
    CHECK(resume.id == POSIX_TRACE_RESUME);
    CHECK(resume.data.empty());
    CHECK(resume.stamp_ns == 3); // the oldest event left
    for (uint64_t stamp = 3; stamp <= 5; ++stamp)
        CHECK(f.next().stamp_ns == stamp);
    CHECK(f.next().read == Read::Nothing);
    CHECK(f.ledger.counters().recorded == 2);
}

TEST_CASE("store reader: a report the filter excludes is neither read nor counted",
          "[store-reader]")
{
    Fixture f(3, POSIX_TRACE_LOOP);
    trace_event_set_t excluded{};
    posixtrace::event_set_insert(excluded, POSIX_TRACE_OVERFLOW);
    SECTION("the overflow event")
    {
        f.filters.set_current(excluded);
        f.offer(4, 1);
        Fixture::Got first = f.next();
        CHECK(first.id == POSIX_TRACE_RESUME);
        CHECK(f.next().stamp_ns == 2);
        CHECK(f.ledger.counters().recorded == 1);
    }
    SECTION("both")
    {
        posixtrace::event_set_insert(excluded, POSIX_TRACE_RESUME);
        f.filters.set_current(excluded);
        f.offer(4, 1);
        Fixture::Got first = f.next();
        CHECK(first.read == Read::Event);
        CHECK(first.stamp_ns == 2);
        CHECK(f.ledger.counters().recorded == 0);
    }
}
