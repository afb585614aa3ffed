#include "stream/system_event_queue.hpp"

#include <algorithm>
#include <iterator>

namespace posixtrace {

pt_record SystemEventQueue::record(trace_event_id_t id, uint64_t timestamp_ns, size_t size) const
{
    pt_record record{};
    record.timestamp_ns = timestamp_ns;
    record.pid = uint32_t(target_);
    record.event_id = id;
    record.data_len = uint32_t(size);
    record.cpu = PT_CPU_SYSTEM;
    return record;
}

// A loss report may be stamped before events queued earlier: it goes
// before them. A log's watermark may say that everything before the floor
// is in the stream (LogHandOff::move_all), so nothing is stamped earlier.
void SystemEventQueue::queue(trace_event_id_t id, uint64_t timestamp_ns, uint64_t floor_ns,
                             const void *data, size_t size)
{
    if (filters_.filters(id))
        return;
    const auto *bytes = static_cast<const uint8_t *>(data);
    queue_record(record(id, timestamp_ns, size), bytes, floor_ns);
}

void SystemEventQueue::queue_record(const pt_record &record, const uint8_t *data, uint64_t floor_ns)
{
    SystemEvent event{{data, data + record.data_len}, record};
    event.header.timestamp_ns = std::max<uint64_t>(record.timestamp_ns, floor_ns);
    auto at = events_.end();
    while (at != events_.begin() && std::prev(at)->header.timestamp_ns > event.header.timestamp_ns)
        --at;
    events_.insert(at, std::move(event));
}

void SystemEventQueue::queue_loss(const LossWindow &window, uint64_t floor_ns)
{
    const LossReport &loss = window.loss;
    posix_trace_overflow_data data{loss.in_kernel + loss.in_stream, loss.in_kernel, loss.in_stream};
    queue(POSIX_TRACE_OVERFLOW, window.from_ns, floor_ns, &data, sizeof data);
    queue(POSIX_TRACE_RESUME, std::max(window.from_ns, window.to_ns), floor_ns, nullptr, 0);
}

} // namespace posixtrace
