#pragma once
#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "posixtrace.h"
#include "sources/lent_chunk.hpp"

namespace posixtrace {

// A record as the store hands it to a reader: its header (checked), the
// stamp to give it (realtime), and its data, where the store keeps it.
struct StoredEvent {
    const pt_record *header;
    const uint8_t *data;
    uint64_t timestamp_ns;
};

// The lanes' chunks a stream's store keeps where the lanes wrote them
// (LentChunk), so that an event is copied once, into the reader's buffer,
// instead of into the store first. Each lane's chunks follow each other in
// its order, which is its timestamp order; across lanes, and against the
// store's own events, the reader takes the oldest first (StreamStore).
// The records are read in memory the traced process can write over: each is
// checked again as it is read, as the merge checks a lane's records, and
// one that no longer fits its chunk or the order its chunk was lent in ends
// the chunk there, counted damaged.
class LentChunks {
public:
    struct Lent {
        LentChunk memory;
        uint32_t from, to; // the records' bytes in the chunk, `from` moving on as they are read
        // CLOCK_MONOTONIC: the first stamp when lent, then the latest read;
        // the latest stamp when lent.
        uint64_t read_ns, last_ns;
        size_t bytes; // what its events take in the stream
        uint32_t events;
    };

    LentChunks();
    LentChunks(const LentChunks &) = delete;
    LentChunks &operator=(const LentChunks &) = delete;
    ~LentChunks() { clear(); }

    // After the chunks lent before by the same lane (`lane`: any token of it).
    void add(const void *lane, const Lent &chunk);
    // Whether a chunk of `lane` whose first record is stamped `first_ns`
    // comes after every chunk that lane lent (a process that wrote over its
    // lane's stamps could make it older).
    bool follows(const void *lane, uint64_t first_ns) const;
    bool empty() const { return lanes_.empty(); }
    size_t bytes() const { return bytes_; }

    // The oldest next record of the lanes, if stamped before `before_ns`
    // (CLOCK_MONOTONIC), its stamp monotonic as lent; nullopt otherwise.
    std::optional<StoredEvent> oldest_before(uint64_t before_ns);
    // Passes the record oldest_before() returned last.
    void pop_oldest();
    // The records stamped at or after `from_ns` go; returns how many events.
    uint64_t cut_from(uint64_t from_ns);
    // Every chunk goes back to its lane's pool.
    void clear();
    // Something stamped `monotonic_ns` was read (from the store or a lane):
    // no record read later may be older.
    void read_up_to(uint64_t monotonic_ns)
    {
        read_floor_ns_ = std::max(read_floor_ns_, monotonic_ns);
    }
    bool read_past(uint64_t monotonic_ns) const { return monotonic_ns < read_floor_ns_; }
    // Records found damaged since the last call.
    uint64_t take_damaged() { return std::exchange(damaged_, 0); }

private:
    struct Lane {
        const void *key;
        std::deque<Lent> chunks;
        bool has_next = false;
        uint32_t next_span = 0;
        // The record at chunks.front().from, when has_next: a copy of its
        // header, checked, and where its data is.
        const uint8_t *next_data = nullptr;
        pt_record next; // last: its data[] is not these
    };
    void find_next(Lane &lane);
    size_t oldest_lane();
    bool still_as_lent(const Lent &chunk, const pt_record &record) const;
    void give_back_front(Lane &lane);
    uint64_t events_from(const Lent &chunk, uint64_t from_ns, uint32_t &cut_at,
                         size_t &cut_bytes) const;

    std::vector<Lane> lanes_; // those holding chunks
    static constexpr size_t kNoLane = SIZE_MAX;
    size_t oldest_ = kNoLane; // the lane whose next record is the oldest, once known
    bool oldest_known_ = false;
    size_t bytes_ = 0;
    uint64_t damaged_ = 0;
    uint64_t read_floor_ns_ = 0;
    pid_t pid_; // a child of fork has zeroed lanes: it gives nothing back
};

} // namespace posixtrace
