#pragma once
#include <catch2/catch.hpp>

#include <trace.h>

#include "store/stream_store.hpp"

namespace posixtrace {

// The oldest event the store would hand a reader, which must be there.
inline const pt_record &oldest_of(StreamStore &store)
{
    const StoredEvent *event = store.peek();
    REQUIRE(event);
    return *event->header;
}

// A system event as a stream makes it (StreamIntake::Owner::system_record).
inline pt_record system_record_of(trace_event_id_t id, uint64_t timestamp_ns, size_t size)
{
    pt_record record{};
    record.event_id = id;
    record.timestamp_ns = timestamp_ns;
    record.data_len = uint32_t(size);
    record.cpu = PT_CPU_SYSTEM;
    return record;
}

inline void take_oldest(StreamStore &store)
{
    REQUIRE(store.peek());
    store.pop_peeked();
}

} // namespace posixtrace
