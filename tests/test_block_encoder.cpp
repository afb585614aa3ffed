// One block of a trace log laid out in memory (log::BlockEncoder), alone:
// each event's bytes where the log format puts them, whatever the length of
// its data. No root, no stream.
#include <catch2/catch.hpp>

#include <posix_trace/events.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "log/block_encoder.hpp"

using namespace posixtrace::log;

namespace {

// Data bytes that differ from one position to the next, and from zero.
std::vector<uint8_t> numbered_bytes(size_t length)
{
    std::vector<uint8_t> bytes(length);
    for (size_t i = 0; i < length; ++i)
        bytes[i] = uint8_t(i * 7 + 1);
    return bytes;
}

pt_record event_with(uint32_t data_len, uint64_t timestamp_ns)
{
    pt_record record{};
    record.timestamp_ns = timestamp_ns;
    record.thread_id = 0x1122334455667788;
    record.prog_address = 0x400000;
    record.pid = 41;
    record.tid = 42;
    record.event_id = POSIX_TRACE_USER_EVENT_FIRST;
    record.data_len = data_len;
    return record;
}

} // namespace

TEST_CASE("block encoder: an event's data, any length, lands whole and padded with zeros",
          "[block-encoder]")
{
    std::vector<size_t> lengths;
    for (size_t length = 0; length <= 49; ++length)
        lengths.push_back(length);
    lengths.insert(lengths.end(), {63, 64, 65, 100, 4095, kMaxEventData});
    for (size_t length : lengths) {
        INFO("data length " << length);
        std::vector<uint8_t> memory(BlockEncoder::memory_for(kMaxBlockPayload), 0xee);
        BlockEncoder block(memory.data(), kMaxBlockPayload);
        std::vector<uint8_t> data = numbered_bytes(length);
        block.add_event(event_with(uint32_t(length), 1000), data.data());

        const uint8_t *record = memory.data() + kBlockHeaderSize;
        size_t size = load<uint32_t>(record);
        REQUIRE(size == BlockEncoder::event_record_bytes(uint32_t(length)));
        REQUIRE(size % 8 == 0);
        REQUIRE(block.bytes() == kBlockHeaderSize + size);
        CHECK(load<uint16_t>(record + 4) == kRecordEvent);
        CHECK(load<uint32_t>(record + 12) == length);
        REQUIRE(std::equal(data.begin(), data.end(), record + kEventRecordHeader));
        for (size_t at = kEventRecordHeader + length; at < size; ++at)
            REQUIRE(record[at] == 0);
        CHECK(memory[kBlockHeaderSize + size] == 0xee); // nothing written past it
    }
}

TEST_CASE("block encoder: an event's fields, its stamp moved by the offset given",
          "[block-encoder]")
{
    std::vector<uint8_t> memory(BlockEncoder::memory_for(4096));
    BlockEncoder block(memory.data(), 4096);
    std::vector<uint8_t> data = numbered_bytes(20);
    block.add_event(event_with(20, 5000), data.data(), 1'000'000);
    block.add_event(event_with(20, 3000), data.data(), -1000);

    const uint8_t *first = memory.data() + kBlockHeaderSize;
    CHECK(load<uint32_t>(first + 8) == POSIX_TRACE_USER_EVENT_FIRST);
    CHECK(load<uint64_t>(first + 16) == 1'005'000);
    CHECK(load<uint32_t>(first + 24) == 41);
    CHECK(load<uint32_t>(first + 28) == 42);
    CHECK(load<uint64_t>(first + 32) == 0x1122334455667788);
    CHECK(load<uint64_t>(first + 40) == 0x400000);
    const uint8_t *second = first + load<uint32_t>(first);
    CHECK(load<uint64_t>(second + 16) == 2000);
    CHECK(block.events() == 2);
    CHECK(block.first_ns() == 2000);
    CHECK(block.last_ns() == 1'005'000);
}

TEST_CASE("block encoder: what was added after a mark is taken back, its names too",
          "[block-encoder]")
{
    std::vector<uint8_t> memory(BlockEncoder::memory_for(4096));
    BlockEncoder block(memory.data(), 4096);
    std::vector<uint8_t> data = numbered_bytes(20);
    const uint32_t kept_id = POSIX_TRACE_USER_EVENT_FIRST, taken_back_id = kept_id + 1;
    block.add_name(kept_id, "kept");
    block.add_event(event_with(20, 5000), data.data());
    BlockEncoder::Mark mark = block.mark();

    block.add_name(taken_back_id, "taken back");
    pt_record later = event_with(20, 9000);
    later.event_id = taken_back_id;
    block.add_event(later, data.data());
    block.add_event(event_with(20, 1000), data.data());
    uint32_t named_since[] = {taken_back_id};
    block.roll_back(mark, named_since);

    CHECK(block.bytes() == mark.size);
    CHECK(block.events() == 1);
    CHECK(block.first_ns() == 5000);
    CHECK(block.last_ns() == 5000);
    CHECK(block.named(kept_id));
    CHECK_FALSE(block.named(taken_back_id));
    std::span<uint8_t> bytes = block.finish(1);
    CHECK(bytes.size() == mark.size);
    CHECK(load<uint32_t>(bytes.data() + 20) == 2); // the name and the event before the mark
}

// What the encoder laid out, walked back (a stream gives its runs back to a
// reader this way): every event in the order added, each field and its
// data as added, its stamp as encoded; names and watermarks are passed.
TEST_CASE("block encoder: each event added is visited back, as it was encoded", "[block-encoder]")
{
    std::vector<uint8_t> memory(BlockEncoder::memory_for(8192));
    BlockEncoder block(memory.data(), 8192);
    std::vector<uint8_t> data = numbered_bytes(37);
    block.add_name(POSIX_TRACE_USER_EVENT_FIRST, "visited");
    block.add_event(event_with(37, 5000), data.data(), 100);
    block.add_watermark(4000);
    pt_record truncated = event_with(0, 7000);
    truncated.flags = PT_RECORD_TRUNCATED;
    block.add_event(truncated, nullptr);
    pt_record other = event_with(3, 6000);
    other.event_id = POSIX_TRACE_USER_EVENT_FIRST + 1;
    block.add_event(other, data.data());

    std::vector<pt_record> visited;
    std::vector<std::vector<uint8_t>> visited_data;
    block.for_each_event([&](const pt_record &record, const uint8_t *bytes) {
        visited.push_back(record);
        visited_data.emplace_back(bytes, bytes + record.data_len);
    });
    REQUIRE(visited.size() == 3);
    CHECK(visited[0].timestamp_ns == 5100);
    CHECK(visited[0].event_id == POSIX_TRACE_USER_EVENT_FIRST);
    CHECK(visited[0].pid == 41);
    CHECK(visited[0].tid == 42);
    CHECK(visited[0].thread_id == 0x1122334455667788);
    CHECK(visited[0].prog_address == 0x400000);
    CHECK(visited[0].flags == 0);
    CHECK(visited_data[0] == data);
    CHECK(visited[1].timestamp_ns == 7000);
    CHECK(visited[1].data_len == 0);
    CHECK(visited[1].flags == PT_RECORD_TRUNCATED);
    CHECK(visited[2].event_id == POSIX_TRACE_USER_EVENT_FIRST + 1);
    CHECK(visited_data[2] == std::vector<uint8_t>(data.begin(), data.begin() + 3));
}
