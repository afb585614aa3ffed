// The trace system's own events waiting for the merge (SystemEventQueue): no
// root, no stream.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "stream/system_event_queue.hpp"

using posixtrace::FilterHistory;
using posixtrace::LossWindow;
using posixtrace::SystemEventQueue;

namespace {

std::vector<uint64_t> stamps(SystemEventQueue &queue)
{
    std::vector<uint64_t> out;
    for (const auto &event : queue.events())
        out.push_back(event.header.timestamp_ns);
    return out;
}

} // namespace

TEST_CASE("system events: kept in timestamp order, never before the floor", "[system-events]")
{
    FilterHistory filters;
    SystemEventQueue queue(4242, filters);
    queue.queue(POSIX_TRACE_START, 100, 0, nullptr, 0);
    queue.queue(POSIX_TRACE_STOP, 300, 0, nullptr, 0);
    queue.queue(POSIX_TRACE_FILTER, 200, 0, nullptr, 0);       // between the two
    queue.queue(POSIX_TRACE_FLUSH_START, 50, 250, nullptr, 0); // lifted to the floor
    CHECK(stamps(queue) == std::vector<uint64_t>{100, 200, 250, 300});
    const pt_record &first = queue.events().front().header;
    CHECK(first.pid == 4242);
    CHECK(first.cpu == PT_CPU_SYSTEM);
    CHECK(first.event_id == POSIX_TRACE_START);
    queue.clear();
    CHECK(queue.empty());
}

TEST_CASE("system events: a loss window is an overflow event, then a resume event",
          "[system-events]")
{
    FilterHistory filters;
    SystemEventQueue queue(1, filters);
    queue.queue(POSIX_TRACE_STOP, 500, 0, nullptr, 0);
    queue.queue_loss(LossWindow{{3, 4, 0}, 100, 400}, 0);
    REQUIRE(stamps(queue) == std::vector<uint64_t>{100, 400, 500});
    const auto &overflow = queue.events()[0];
    CHECK(overflow.header.event_id == POSIX_TRACE_OVERFLOW);
    posix_trace_overflow_data lost{};
    REQUIRE(overflow.data.size() == sizeof lost);
    std::memcpy(&lost, overflow.data.data(), sizeof lost);
    CHECK(lost.lost == 7);
    CHECK(lost.lost_in_kernel == 3);
    CHECK(lost.lost_in_stream == 4);
    CHECK(queue.events()[1].header.event_id == POSIX_TRACE_RESUME);
    CHECK(queue.events()[1].header.data_len == 0);
    // A window that ended before it began is reported at its start.
    queue.clear();
    queue.queue_loss(LossWindow{{0, 1, 0}, 300, 200}, 0);
    CHECK(stamps(queue) == std::vector<uint64_t>{300, 300});
}

TEST_CASE("system events: a type the filter excludes is not queued", "[system-events]")
{
    FilterHistory filters;
    trace_event_set_t excluded;
    posix_trace_eventset_empty(&excluded);
    posix_trace_eventset_add(POSIX_TRACE_RESUME, &excluded);
    filters.set_current(excluded);
    SystemEventQueue queue(1, filters);
    queue.queue_loss(LossWindow{{0, 2, 0}, 10, 20}, 0);
    REQUIRE(queue.events().size() == 1);
    CHECK(queue.events()[0].header.event_id == POSIX_TRACE_OVERFLOW);
}
