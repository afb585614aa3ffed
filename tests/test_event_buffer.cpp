// EventBuffer alone: records come back whole and in order over many laps of
// its memory, and a reader that keeps up keeps its memory small.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

#include "attributes/attributes.hpp"
#include "store/event_buffer.hpp"

using posixtrace::EventBuffer;

namespace {

pt_record numbered(uint64_t n, uint32_t data_len)
{
    pt_record record{};
    record.event_id = 1000;
    record.timestamp_ns = n;
    record.data_len = data_len;
    return record;
}

// The payload of record n: its number, repeated.
std::vector<uint8_t> payload_of(uint64_t n, uint32_t data_len)
{
    std::vector<uint8_t> bytes(data_len);
    for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = uint8_t(n + i);
    return bytes;
}

bool front_is(const EventBuffer &buffer, uint64_t n, uint32_t data_len)
{
    const pt_record &front = buffer.front();
    std::vector<uint8_t> expected = payload_of(n, data_len);
    return front.timestamp_ns == n && front.data_len == data_len &&
           std::equal(expected.begin(), expected.end(), front.data);
}

long resident_bytes()
{
    std::ifstream statm("/proc/self/statm");
    long total = 0, resident = 0;
    statm >> total >> resident;
    return resident * sysconf(_SC_PAGESIZE);
}

} // namespace

TEST_CASE("EventBuffer: records of every size come back whole and in order, lap after lap")
{
    EventBuffer buffer(64 * 1024);
    REQUIRE(buffer.valid());
    uint64_t pushed = 0, popped = 0;
    auto size_of = [](uint64_t n) { return uint32_t((n * 37) % 900); };
    // Fill to a varying depth, then drain to a varying depth: the records
    // wrap at every offset, sometimes with the buffer emptied, sometimes not.
    for (int round = 0; round < 2000; ++round) {
        size_t depth = size_t(round * 7919) % 60;
        while (pushed - popped < depth &&
               buffer.fits(posixtrace::stored_event_size(size_of(pushed)))) {
            std::vector<uint8_t> bytes = payload_of(pushed, size_of(pushed));
            buffer.push(numbered(pushed, size_of(pushed)), bytes.data());
            ++pushed;
        }
        size_t keep = size_t(round * 104729) % 3 == 0 ? 0 : depth / 2;
        while (pushed - popped > keep) {
            REQUIRE(front_is(buffer, popped, size_of(popped)));
            buffer.pop();
            ++popped;
        }
        REQUIRE(buffer.empty() == (pushed == popped));
    }
    CHECK(pushed > 20000);
}

TEST_CASE("EventBuffer: emptied at any place, it holds its whole capacity again")
{
    const size_t capacity = 16 * 1024, each = posixtrace::stored_event_size(64);
    EventBuffer buffer(capacity);
    REQUIRE(buffer.valid());
    std::vector<uint8_t> bytes = payload_of(0, 64);
    for (int round = 0; round < 50; ++round) {
        size_t count = 0;
        while (buffer.fits(each)) {
            buffer.push(numbered(count, 64), bytes.data());
            ++count;
        }
        CHECK(count == capacity / each); // every round: as many as the size takes
        // Read back all but one, then that one too, at a varying place.
        for (size_t i = 0; i < count; ++i)
            buffer.pop();
        REQUIRE(buffer.empty());
        CHECK(buffer.used() == 0);
        buffer.push(numbered(0, 64), bytes.data()); // offset the next lap
        for (int i = 0; i < round % 5; ++i)
            buffer.push(numbered(0, 64), bytes.data());
        while (!buffer.empty())
            buffer.pop();
    }
}

// The stream's size is the one limit: whatever the records' sizes and
// wherever their chunks end, a record is refused only when it would take
// the records past the size.
TEST_CASE("EventBuffer: refuses a record exactly when the size would be passed")
{
    for (size_t capacity : {size_t(16 * 1024), size_t(300 * 1000), size_t(3u << 20)}) {
        EventBuffer buffer(capacity);
        REQUIRE(buffer.valid());
        uint64_t pushed = 0, popped = 0, refusals = 0;
        std::vector<uint8_t> bytes = payload_of(0, PT_DATA_SIZE_LIMIT);
        for (uint64_t attempt = 0; attempt < 200000; ++attempt) {
            uint32_t data_len = uint32_t((attempt * 2654435761u) % (PT_DATA_SIZE_LIMIT + 1));
            size_t need = posixtrace::stored_event_size(data_len);
            bool room = buffer.used() + need <= capacity;
            REQUIRE(buffer.fits(need) == room);
            if (room) {
                buffer.push(numbered(pushed++, data_len), bytes.data());
            } else {
                ++refusals; // then read some, as a reader or LOOP would
                for (uint64_t n = (attempt % 7) + 1; n-- && !buffer.empty(); ++popped)
                    buffer.pop();
            }
        }
        CHECK(refusals > 100);
        CHECK(pushed > popped);
    }
}

// A reader behind by a backlog of 5 MB: the chunks it reads are the next
// ones written, so the memory taken is about the backlog's, not the 192 MB
// that pass through.
TEST_CASE("EventBuffer: a reader behind by a backlog works in the same memory")
{
    EventBuffer buffer(512u << 20);
    REQUIRE(buffer.valid());
    std::vector<uint8_t> bytes = payload_of(0, 64);
    long before = resident_bytes();
    for (uint64_t n = 0; n < 50'000; ++n)
        buffer.push(numbered(n, 64), bytes.data());
    for (uint64_t n = 50'000; n < 2'000'000; ++n) {
        buffer.push(numbered(n, 64), bytes.data());
        REQUIRE(buffer.front().timestamp_ns == n - 50'000);
        buffer.pop();
    }
    long grown = resident_bytes() - before;
    INFO("resident memory grew by " << grown / 1024 << " KiB");
    CHECK(grown < 24l << 20);
}

// 1,000,000 records of 64 bytes pass through a 512 MiB buffer, read as they
// come: 96 MB of records, which would take as much memory if every record
// went to fresh pages.
TEST_CASE("EventBuffer: a reader that keeps up keeps the buffer's memory small")
{
    EventBuffer buffer(512u << 20);
    REQUIRE(buffer.valid());
    std::vector<uint8_t> bytes = payload_of(0, 64);
    long before = resident_bytes();
    for (uint64_t n = 0; n < 1'000'000; ++n) {
        for (int burst = 0; burst < 3; ++burst)
            buffer.push(numbered(n, 64), bytes.data());
        for (int burst = 0; burst < 3; ++burst)
            buffer.pop();
    }
    long grown = resident_bytes() - before;
    INFO("resident memory grew by " << grown / 1024 << " KiB");
    CHECK(grown < 16l << 20);
}
