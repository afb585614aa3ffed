#pragma once
#include <catch2/catch.hpp>

#include "store/stream_store.hpp"

namespace posixtrace {

// The oldest event the store would hand a reader, which must be there.
inline const pt_record &oldest_of(StreamStore &store)
{
    const StoredEvent *event = store.peek();
    REQUIRE(event);
    return *event->header;
}

inline void take_oldest(StreamStore &store)
{
    REQUIRE(store.peek());
    store.pop_peeked();
}

} // namespace posixtrace
