// A FLUSH stream's runs (LaneRuns) taking a lane's chunk whole, alone: a
// chunk is taken entire or not at all, and one refused halfway leaves the
// run as it was, names included. The whole path, lanes to log, is tested
// end to end in test_log_runs.cpp.
#include <catch2/catch.hpp>

#include <posix_trace/events.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "log/log_writer.hpp"
#include "memory_ring_support.hpp"
#include "stream/lane_runs.hpp"

using posixtrace::LaneRuns;
using posixtrace::RingMerger;
using posixtrace::log::BlockEncoder;
using posixtrace::log::kEventRecordHeader;
using posixtrace::log::LogWriter;

namespace {

const uint32_t kFirstId = POSIX_TRACE_USER_EVENT_FIRST, kSecondId = kFirstId + 1;

// A log on an unlinked file, taking runs.
struct RunsToLog {
    RunsToLog()
    {
        char path[] = "/tmp/posixtrace-lane-runs-XXXXXX";
        fd = mkstemp(path);
        REQUIRE(fd >= 0);
        unlink(path);
        posixtrace::Attributes attributes = posixtrace::Attributes::defaults();
        attributes.stream_full_policy = POSIX_TRACE_FLUSH;
        REQUIRE(LogWriter::create(fd, attributes, getpid(), posixtrace::TraceOrigin{}, {},
                                  LaneRuns::kRunBytesAtLeast, {}, log) == 0);
        REQUIRE(log->runs_taken());
        runs = std::make_unique<LaneRuns>(*log, 0);
        REQUIRE(runs->valid());
    }
    ~RunsToLog()
    {
        runs.reset();
        log.reset();
        close(fd);
    }

    int fd = -1;
    std::unique_ptr<LogWriter> log;
    std::unique_ptr<LaneRuns> runs;
    std::map<uint32_t, std::string> names{{kFirstId, "first"}, {kSecondId, "second"}};
    uint64_t cut_off_below_ns = 0;
    LaneRuns::Judge judge{
        [this](uint64_t monotonic_ns) { return monotonic_ns >= cut_off_below_ns; },
        [](const pt_record &) { return true; },
        [this](uint32_t id) -> std::optional<std::string> {
            auto found = names.find(id);
            return found == names.end() ? std::nullopt : std::optional(found->second);
        }};
};

size_t expected_bytes(size_t events, uint32_t data_len)
{
    return BlockEncoder::name_record_bytes("first") + BlockEncoder::name_record_bytes("second") +
           events * BlockEncoder::event_record_bytes(data_len);
}

} // namespace

TEST_CASE("lane runs: a chunk with a record still being written is left whole, the run as it was",
          "[lane-runs]")
{
    RunsToLog to;
    MemoryRing ring;
    ring.commit(ring.reserve(16), 100, kFirstId, 16);
    ring.commit(ring.reserve(16), 200, kSecondId, 16); // a second name, added then taken back
    uint64_t busy = ring.reserve(16);
    RingMerger::Chunk chunk{ring, 0, ring.producer(), 0};

    CHECK_FALSE(to.runs->take(chunk, to.judge));
    CHECK(to.runs->bytes_held() == 0);

    ring.commit(busy, 300, kSecondId, 16);
    std::optional<LaneRuns::Taken> taken = to.runs->take(chunk, to.judge);
    REQUIRE(taken);
    CHECK(taken->events == 3);
    CHECK(taken->latest_ns == 300);
    // Both names again: the refused take left none behind.
    CHECK(taken->bytes == expected_bytes(3, 16));
    CHECK(to.runs->bytes_held() == taken->bytes);
}

TEST_CASE("lane runs: a chunk is refused whole when its first record is cut off, or too old",
          "[lane-runs]")
{
    RunsToLog to;
    MemoryRing ring;
    ring.commit(ring.reserve(8), 100, kFirstId, 8);
    ring.commit(ring.reserve(8), 200, kSecondId, 8);
    RingMerger::Chunk chunk{ring, 0, ring.producer(), 0};

    to.cut_off_below_ns = 150; // posix_trace_clear between its records
    CHECK_FALSE(to.runs->take(chunk, to.judge));
    to.cut_off_below_ns = 0;
    RingMerger::Chunk too_old{ring, 0, ring.producer(), 101};
    CHECK_FALSE(to.runs->take(too_old, to.judge));
    CHECK(to.runs->bytes_held() == 0);

    std::optional<LaneRuns::Taken> taken = to.runs->take(chunk, to.judge);
    REQUIRE(taken);
    CHECK(taken->events == 2);
    CHECK(taken->bytes == expected_bytes(2, 8));
}

// The process can write over its lane: a stamp that goes back in its chunk
// leaves the chunk to the merge, which judges each record, as a chunk kept
// in place by the store is judged (one walk for both).
TEST_CASE("lane runs: a chunk whose stamps go back is refused whole, the run as it was",
          "[lane-runs]")
{
    RunsToLog to;
    MemoryRing ring;
    ring.commit(ring.reserve(8), 100, kFirstId, 8);
    ring.commit(ring.reserve(8), 300, kSecondId, 8);
    ring.commit(ring.reserve(8), 200, kFirstId, 8);
    RingMerger::Chunk chunk{ring, 0, ring.producer(), 0};

    CHECK_FALSE(to.runs->take(chunk, to.judge));
    CHECK(to.runs->bytes_held() == 0);

    RingMerger::Chunk in_order{ring, 0, 2 * ring.producer() / 3, 0};
    std::optional<LaneRuns::Taken> taken = to.runs->take(in_order, to.judge);
    REQUIRE(taken);
    CHECK(taken->events == 2);
    CHECK(taken->latest_ns == 300);
}

TEST_CASE("lane runs: discarded records are skipped, a name is given once a run", "[lane-runs]")
{
    RunsToLog to;
    MemoryRing ring;
    ring.commit(ring.reserve(8), 100, kFirstId, 8);
    ring.discard(ring.reserve(8));
    ring.commit(ring.reserve(8), 200, kSecondId, 8);
    uint64_t middle = ring.producer();
    ring.commit(ring.reserve(8), 300, kFirstId, 8);
    ring.commit(ring.reserve(8), 400, kSecondId, 8);

    std::optional<LaneRuns::Taken> first = to.runs->take({ring, 0, middle, 0}, to.judge);
    REQUIRE(first);
    CHECK(first->events == 2);
    CHECK(first->bytes == expected_bytes(2, 8));
    std::optional<LaneRuns::Taken> second =
        to.runs->take({ring, middle, ring.producer(), 0}, to.judge);
    REQUIRE(second);
    CHECK(second->events == 2);
    CHECK(second->bytes == 2 * BlockEncoder::event_record_bytes(8)); // named already
    CHECK(second->latest_ns == 400);
}

TEST_CASE("lane runs: a run with room for a chunk's records but not their names closes, the "
          "chunk goes whole into the next",
          "[lane-runs]")
{
    RunsToLog to;
    const size_t capacity = std::min(to.log->run_capacity(), LaneRuns::kRunBytesAtMost);
    std::deque<MemoryRing> rings(1);
    auto take_one = [&](uint32_t id, uint32_t data_len) {
        if (rings.back().producer() + 8200 > 60000)
            rings.emplace_back();
        MemoryRing &ring = rings.back();
        uint64_t from = ring.producer();
        ring.commit(ring.reserve(data_len), 1000 + rings.size(), id, data_len);
        return to.runs->take({ring, from, ring.producer(), 0}, to.judge);
    };
    // The run is filled until the room left holds the next chunk's record
    // (64 bytes in its lane) but not its name as well (24 bytes more).
    while (capacity - to.runs->bytes_held() > 4400)
        REQUIRE(take_one(kFirstId, 4000));
    size_t room = capacity - to.runs->bytes_held();
    size_t left = 72 + room % 8;
    REQUIRE(take_one(kFirstId, uint32_t(room - left - kEventRecordHeader)));
    REQUIRE(capacity - to.runs->bytes_held() == left);

    size_t held_before = to.runs->bytes_held();
    std::optional<LaneRuns::Taken> taken = take_one(kSecondId, 8);
    REQUIRE(taken);
    CHECK(taken->events == 1);
    CHECK(taken->bytes ==
          BlockEncoder::name_record_bytes("second") + BlockEncoder::event_record_bytes(8));
    CHECK(to.runs->bytes_held() == held_before + taken->bytes);
}

TEST_CASE(
    "lane runs: a record claiming more data than its slot holds leaves the chunk to the merge",
    "[lane-runs]")
{
    RunsToLog to;
    MemoryRing ring;
    ring.commit(ring.reserve(8), 100, kFirstId, 8);
    ring.commit(ring.reserve(8), 200, kFirstId, 4000); // its slot holds 8 bytes of data
    RingMerger::Chunk chunk{ring, 0, ring.producer(), 0};

    CHECK_FALSE(to.runs->take(chunk, to.judge));
    CHECK(to.runs->bytes_held() == 0);
}

// A FLUSH stream read with getnext takes back the runs it held for its log:
// every event of every run held, open or closed, as it was recorded (its
// stamp as the log has it), and none is held any more.
TEST_CASE("lane runs: the runs held are given back event by event, then forgotten", "[lane-runs]")
{
    RunsToLog to;
    MemoryRing first, second;
    first.commit(first.reserve(16), 100, kFirstId, 16);
    first.discard(first.reserve(8));
    first.commit(first.reserve(4), 300, kSecondId, 4);
    second.commit(second.reserve(0), 200, kFirstId, 0);
    REQUIRE(to.runs->take({first, 0, first.producer(), 0}, to.judge));
    REQUIRE(to.runs->take({second, 0, second.producer(), 0}, to.judge));
    std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> given;
    uint64_t events = to.runs->give_back([&](const pt_record &record, const uint8_t *data) {
        given.emplace_back(record.timestamp_ns, record.event_id, record.data_len);
        CHECK(std::all_of(data, data + record.data_len, [](uint8_t byte) { return byte == 0; }));
    });
    CHECK(events == 3);
    CHECK(given == std::vector<std::tuple<uint64_t, uint32_t, uint32_t>>{
                       {100, kFirstId, 16}, {300, kSecondId, 4}, {200, kFirstId, 0}});
    CHECK(to.runs->bytes_held() == 0);
    CHECK(to.runs->give_back([](const pt_record &, const uint8_t *) { FAIL("given twice"); }) == 0);
}
