// Runs: the lanes' whole chunks that a POSIX_TRACE_FLUSH stream hands to
// its log without merging them (stream/lane_runs.hpp), and the logs of
// version 2 they make, whose blocks overlap in time and whose reader merges
// them back (docs/log-format.md). Real streams of this process write the
// logs; the hostile ones are those logs with their bytes changed.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "lanes_support.hpp"
#include "log/log_format.hpp"
#include "log_support.hpp"
#include "recording_support.hpp"

using namespace test_support;
using namespace lanes_support;
namespace format = posixtrace::log;

namespace {

// One block of a log whose blocks follow each other (APPEND, UNTIL_FULL).
struct BlockAt {
    size_t offset;
    uint32_t payload;           // bytes of records after its header
    uint64_t first_ns, last_ns; // smallest and largest stamp
    std::vector<size_t> events; // offsets in the log of its event records
    std::vector<size_t> watermarks;
};

std::vector<BlockAt> blocks_of(const std::vector<unsigned char> &log)
{
    std::vector<BlockAt> blocks;
    size_t at = size_t(format::load<uint64_t>(log.data() + 16));
    while (at + format::kBlockHeaderSize <= log.size() &&
           format::load<uint32_t>(log.data() + at) == format::kBlockMagic) {
        uint32_t payload = format::load<uint32_t>(log.data() + at + 16);
        BlockAt block{at,
                      payload,
                      format::load<uint64_t>(log.data() + at + 24),
                      format::load<uint64_t>(log.data() + at + 32),
                      {},
                      {}};
        for (size_t record = at + format::kBlockHeaderSize;
             record < at + format::kBlockHeaderSize + payload;) {
            uint16_t type = format::load<uint16_t>(log.data() + record + 4);
            if (type == format::kRecordEvent)
                block.events.push_back(record);
            else if (type == format::kRecordWatermark)
                block.watermarks.push_back(record);
            record += format::load<uint32_t>(log.data() + record);
        }
        blocks.push_back(block);
        at += format::kBlockHeaderSize + payload;
    }
    return blocks;
}

// The block's checksum, after its bytes were changed.
void seal(std::vector<unsigned char> &log, const BlockAt &block)
{
    uint32_t payload = format::load<uint32_t>(log.data() + block.offset + 16);
    format::store<uint32_t>(
        log.data() + block.offset + 4,
        format::crc32_of(log.data() + block.offset + 8, format::kBlockHeaderSize - 8 + payload));
}

uint64_t stamp_of(const std::vector<unsigned char> &log, size_t record)
{
    return format::load<uint64_t>(log.data() + record + 16);
}

// Some block starts before an earlier one ended: the stream handed runs.
bool blocks_overlap(const std::vector<BlockAt> &blocks)
{
    uint64_t latest = 0;
    for (const BlockAt &block : blocks) {
        if (!block.events.empty() && block.first_ns < latest)
            return true;
        latest = std::max(latest, block.last_ns);
    }
    return false;
}

struct Burst {
    std::vector<unsigned char> log;
    posix_trace_counters counters{};
};

// Threads that wait to be let go, then run their work. Whatever ends the
// test (a failed REQUIRE as well), they are let go and joined.
class HeldEmitters {
public:
    ~HeldEmitters() { join(); }
    void add(std::function<void()> work)
    {
        threads_.emplace_back([this, work = std::move(work)] {
            while (!go_.load())
                std::this_thread::yield();
            work();
            done_.fetch_add(1);
        });
    }
    void let_go() { go_ = true; }
    bool all_done() const { return done_.load() == int(threads_.size()); }
    void join()
    {
        let_go();
        for (auto &thread : threads_)
            if (thread.joinable())
                thread.join();
    }

private:
    std::atomic<bool> go_{false};
    std::atomic<int> done_{0};
    std::vector<std::thread> threads_;
};

// `threads` threads emit `each` numbered events flat out into a FLUSH
// stream of `stream_size` bytes with a log of `log_policy`, the drain held
// until they are done (the lanes hold 32 MiB at least).
Burst burst_into_log(int log_policy, int threads, int each, size_t stream_size,
                     trace_event_id_t &id)
{
    Attr a;
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, POSIX_TRACE_FLUSH) == 0);
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, log_policy) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, stream_size) == 0);
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, 256u << 20) == 0);
    TempFile file;
    StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
    id = user_event("runs.numbered");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    HeldEmitters emitters;
    for (int t = 0; t < threads; ++t)
        emitters.add([=] {
            for (int i = 0; i < each; ++i)
                emit_numbered(id, t, i);
        });
    {
        // The drain waits until the burst is over, so that it finds whole
        // chunks to hand over as runs however fast it would have read them
        // one by one. The caller spins: blocked, it would let the drain run.
        DrainStarved starved;
        emitters.let_go();
        while (!emitters.all_done()) {
        }
    }
    emitters.join();
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    Burst burst;
    REQUIRE(posix_trace_get_counters(stream.get(), &burst.counters) == 0);
    REQUIRE(stream.shutdown() == 0);
    burst.log = file.bytes();
    return burst;
}

// Reads a log of many events without keeping them: how many, in order or
// not, and what ended the reading.
struct Counted {
    size_t events = 0;
    bool ordered = true;
    int error = 0;
};

Counted count_bytes(const std::vector<unsigned char> &bytes)
{
    TempFile copy;
    copy.write_bytes(bytes);
    LogGuard log(copy.path());
    REQUIRE(log.open_error() == 0);
    Counted counted;
    timespec last{};
    for (;;) {
        posix_trace_event_info info;
        unsigned char data[64];
        size_t length = 0;
        int unavailable = 0;
        counted.error =
            posix_trace_getnext_event(log.get(), &info, data, sizeof data, &length, &unavailable);
        if (counted.error || unavailable)
            return counted;
        counted.ordered = counted.ordered && timespec_le(last, info.posix_timestamp);
        last = info.posix_timestamp;
        ++counted.events;
    }
}

LogRead read_bytes(const std::vector<unsigned char> &bytes)
{
    TempFile copy;
    copy.write_bytes(bytes);
    LogGuard log(copy.path());
    REQUIRE(log.open_error() == 0);
    return read_log(log.get());
}

// The lanes hold 32 MiB at least: a burst of 2 x 150,000 events of 8 bytes
// (80 bytes a record) fits whatever the drain does.
constexpr int kEach = 150'000;

} // namespace

TEST_CASE("log runs: a burst of two threads reaches the log whole, each thread in order",
          "[log][runs][self-tracing]")
{
    if (uprobe_path_forced()) {
        SUCCEED("no lanes, so no runs: the uprobe path writes logs of version 1");
        return;
    }
    int policy = GENERATE(POSIX_TRACE_APPEND, POSIX_TRACE_LOOP);
    CAPTURE(policy);
    trace_event_id_t id;
    Burst burst = burst_into_log(policy, 2, kEach, 8u << 20, id);
    CHECK(burst.counters.lost_in_kernel == 0);
    CHECK(burst.counters.lost_in_stream == 0);
    CHECK(format::load<uint16_t>(burst.log.data() + 8) == format::kMajorVersionOverlapping);
    if (policy == POSIX_TRACE_APPEND)
        CHECK(blocks_overlap(blocks_of(burst.log)));
    LogRead read = read_bytes(burst.log);
    REQUIRE(read.error == 0);
    check_timestamps_ordered(read.events);
    auto sequences = sequences_of(read.events, id);
    REQUIRE(sequences.size() == 2);
    CHECK(sequences[0] == sequence_up_to(kEach));
    CHECK(sequences[1] == sequence_up_to(kEach));
}

TEST_CASE("log runs: a log whose blocks overlap, damaged or hostile, is refused or read in order",
          "[log][runs][hostile][self-tracing]")
{
    if (uprobe_path_forced()) {
        SUCCEED("no lanes, so no runs");
        return;
    }
    trace_event_id_t id;
    Burst burst = burst_into_log(POSIX_TRACE_APPEND, 2, kEach, 8u << 20, id);
    std::vector<unsigned char> log = burst.log;
    std::vector<BlockAt> blocks = blocks_of(log);
    REQUIRE(blocks.size() > 8);
    REQUIRE(blocks_overlap(blocks));

    SECTION("a watermark raised past events of a later block: EINVAL there, order kept before")
    {
        const BlockAt &block = blocks[2];
        REQUIRE(!block.watermarks.empty());
        format::store<uint64_t>(log.data() + block.watermarks.back() + 8, UINT64_MAX - 1);
        seal(log, block);
        LogRead read = read_bytes(log);
        CHECK(read.error == EINVAL);
        check_timestamps_ordered(read.events);
        CHECK(read.events.size() < size_t(2 * kEach));
    }
    SECTION("a watermark that goes back: EINVAL")
    {
        const BlockAt &block = blocks[blocks.size() / 2];
        REQUIRE(!block.watermarks.empty());
        format::store<uint64_t>(log.data() + block.watermarks.back() + 8, 1);
        seal(log, block);
        LogRead read = read_bytes(log);
        CHECK(read.error == EINVAL);
        check_timestamps_ordered(read.events);
    }
    SECTION("a block's events out of order are read in order, none lost")
    {
        // Two events of a block of the same size, the first stamped earlier.
        auto size_of = [&](size_t record) { return format::load<uint32_t>(log.data() + record); };
        size_t first = 0, last = 0;
        const BlockAt *swapped = nullptr;
        for (const BlockAt &block : blocks)
            for (size_t i = 1; !swapped && i < block.events.size(); ++i)
                if (size_of(block.events[i]) == size_of(block.events[0]) &&
                    stamp_of(log, block.events[0]) < stamp_of(log, block.events[i])) {
                    first = block.events[0];
                    last = block.events[i];
                    swapped = &block;
                }
        REQUIRE(swapped);
        size_t size = size_of(first);
        const BlockAt *with_two_events = swapped;
        std::swap_ranges(log.begin() + std::ptrdiff_t(first),
                         log.begin() + std::ptrdiff_t(first + size),
                         log.begin() + std::ptrdiff_t(last));
        seal(log, *with_two_events);
        LogRead read = read_bytes(log);
        REQUIRE(read.error == 0);
        check_timestamps_ordered(read.events);
        auto sequences = sequences_of(read.events, id);
        CHECK(sequences[0].size() + sequences[1].size() == size_t(2 * kEach));
    }
    SECTION("damage stops the reading there: what was read is the log's beginning")
    {
        LogRead whole = read_bytes(log);
        REQUIRE(whole.error == 0);
        const BlockAt &block = blocks[blocks.size() / 2];
        log[block.events.back() + 20] ^= 0x10; // a stamp: the checksum no longer holds
        LogRead read = read_bytes(log);
        CHECK(read.error == EINVAL);
        REQUIRE(read.events.size() < whole.events.size());
        for (size_t i = 0; i < read.events.size(); ++i)
            REQUIRE(same_event(read.events[i], whole.events[i]));
    }
    SECTION("a log cut inside a block reads every whole block before it, in order")
    {
        const BlockAt &block = blocks[blocks.size() / 2];
        // Half way through its payload: a block may hold one small event,
        // which a cut at a fixed offset would leave whole.
        INFO("the cut block's payload: " << block.payload << " bytes");
        REQUIRE(block.payload >= 2);
        log.resize(block.offset + format::kBlockHeaderSize + block.payload / 2); // no trailer
        LogRead read = read_bytes(log);
        CHECK(read.error == 0);
        check_timestamps_ordered(read.events);
        size_t before = 0;
        for (const BlockAt &whole : blocks)
            if (whole.offset < block.offset)
                before += whole.events.size();
        CHECK(read.events.size() == before);
    }
}

TEST_CASE("log runs: watermarks that never move make a reader hold no more than 64 MiB",
          "[log][runs][hostile][self-tracing]")
{
    if (uprobe_path_forced()) {
        SUCCEED("no lanes, so no runs");
        return;
    }
    trace_event_id_t id;
    Burst burst = burst_into_log(POSIX_TRACE_APPEND, 1, 20'000, 1u << 20, id);
    std::vector<unsigned char> log = burst.log;
    std::vector<BlockAt> blocks = blocks_of(log);
    auto largest = std::max_element(blocks.begin(), blocks.end(), [](const auto &a, const auto &b) {
        return a.events.size() < b.events.size();
    });
    REQUIRE(largest != blocks.end());
    REQUIRE(!largest->watermarks.empty());
    // That block again and again, each saying nothing is complete yet.
    std::vector<unsigned char> block(
        log.begin() + std::ptrdiff_t(largest->offset),
        log.begin() + std::ptrdiff_t(largest->offset + format::kBlockHeaderSize +
                                     format::load<uint32_t>(log.data() + largest->offset + 16)));
    for (size_t watermark : largest->watermarks)
        format::store<uint64_t>(block.data() + (watermark - largest->offset) + 8, 0);
    size_t data_offset = size_t(format::load<uint64_t>(log.data() + 16));
    std::vector<unsigned char> hostile(log.begin(), log.begin() + std::ptrdiff_t(data_offset));
    size_t copies = format::kMaxOverlapBytes / block.size() + 2;
    for (size_t sequence = 0; sequence < copies; ++sequence) {
        format::store<uint64_t>(block.data() + 8, sequence);
        format::store<uint32_t>(block.data() + 4,
                                format::crc32_of(block.data() + 8, block.size() - 8));
        hostile.insert(hostile.end(), block.begin(), block.end());
    }
    Counted read = count_bytes(hostile);
    CHECK(read.error == EINVAL);
    CHECK(read.events == 0); // none was ever complete
}

namespace {

// A FLUSH stream of 64 MiB with a LOOP log of 64 MiB: it takes runs, and
// holds them until 4 MiB of them make it flush.
StreamGuard make_flush_stream_with_large_log(int fd)
{
    Attr a;
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, POSIX_TRACE_FLUSH) == 0);
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_LOOP) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 64u << 20) == 0);
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, 64u << 20) == 0);
    return make_logged_stream(fd, &a.attr);
}

} // namespace

TEST_CASE("log runs: posix_trace_clear takes the runs held with the stream's other events",
          "[log][runs][self-tracing]")
{
    TempFile file;
    StreamGuard stream = make_flush_stream_with_large_log(file.fd());
    trace_event_id_t id = user_event("runs.cleared");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    for (int i = 0; i < kEach; ++i)
        emit_numbered(id, 0, i);
    // The drain has taken chunks by now, and holds them: the stream is far
    // from full.
    usleep(20'000);
    REQUIRE(posix_trace_clear(stream.get()) == 0);
    for (int i = 0; i < 1000; ++i)
        emit_numbered(id, 1, i);
    REQUIRE(stream.shutdown() == 0);
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    REQUIRE(read.error == 0);
    auto sequences = sequences_of(read.events, id);
    CHECK(sequences.count(0) == 0);
    CHECK(sequences[1] == sequence_up_to(1000));
}

namespace {

// Reads the stream with posix_trace_timedgetnext_event until `wanted`
// events of `id` came, or nothing did for two seconds.
std::vector<Event> read_until(trace_id_t trid, trace_event_id_t id, int wanted)
{
    std::vector<Event> events;
    for (int of_id = 0; of_id < wanted;) {
        recording_support::Got got = recording_support::timed_next(trid, 2'000'000'000);
        if (got.err || got.unavailable)
            break;
        of_id += got.info.posix_event_id == id;
        events.push_back(
            {got.info, {got.data.begin(), got.data.begin() + std::ptrdiff_t(got.data_len)}});
    }
    return events;
}

} // namespace

// The first getnext of a FLUSH stream with a log: the runs the stream holds
// for its log come back to it, and the reader reads them among its other
// events, in order; what is read never reaches the log. Stopped first, every
// run is older than the merge's safe point; read while the stream runs, the
// youngest come through the merge.
TEST_CASE("log runs: the runs held are read by the first getnext, in order, and not logged",
          "[log][runs][self-tracing]")
{
    bool stopped = GENERATE(true, false);
    INFO((stopped ? "read once stopped" : "read while it runs"));
    constexpr int kEvents = 30'000; // under the 4 MiB of runs that make it flush
    TempFile file;
    StreamGuard stream = make_flush_stream_with_large_log(file.fd());
    filter_thread_events(stream.get());
    trace_event_id_t id = user_event("runs.read_back");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    for (int i = 0; i < kEvents; ++i)
        emit_numbered(id, 0, i);
    usleep(20'000); // the drain takes the chunks as runs meanwhile
    if (stopped)
        REQUIRE(posix_trace_stop(stream.get()) == 0);
    else
        for (int i = 0; i < 100; ++i) // after the first read, through the merge
            emit_numbered(id, 1, i);

    std::vector<Event> events = read_until(stream.get(), id, kEvents + (stopped ? 0 : 100));
    for (Event &rest : read_available(stream.get()))
        events.push_back(std::move(rest));
    auto sequences = sequences_of(events, id);
    CHECK(sequences[0] == sequence_up_to(kEvents));
    if (!stopped)
        CHECK(sequences[1] == sequence_up_to(100));
    check_timestamps_ordered(events);
    REQUIRE_FALSE(events.empty());
    CHECK(events.front().info.posix_event_id == POSIX_TRACE_START);
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.refused == 0);
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(stream.get(), &counters) == 0);
    CHECK(counters.recorded == events.size()); // each once, all read
    CHECK(counters.lost_in_stream == 0);
    REQUIRE(stream.shutdown() == 0);

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    REQUIRE(read.error == 0);
    CHECK(user_events_of(read.events, id).empty());
}
