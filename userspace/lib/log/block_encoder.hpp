#pragma once
#include <trace.h>

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "log/log_format.hpp"
#include "posixtrace.h"

namespace posixtrace::log {

// Lays out one block of a trace log (docs/log-format.md, "Blocks" and
// "Records") in memory its owner provides: its records one after the
// other, then its header once it is finished. It knows nothing of where the
// block goes, nor of the log's policy; the writer decides that.
class BlockEncoder {
public:
    BlockEncoder() = default;
    // `capacity`: the most bytes of records, a watermark record's room
    // excluded; `memory` has room for memory_for(capacity) bytes.
    BlockEncoder(uint8_t *memory, size_t capacity);
    static constexpr size_t memory_for(size_t capacity)
    {
        return kBlockHeaderSize + capacity + kWatermarkRecordSize;
    }

    bool empty() const { return records_ == 0; }
    uint32_t events() const { return events_; }
    size_t payload_bytes() const { return size_ - kBlockHeaderSize; }
    size_t bytes() const { return size_; }
    size_t room() const { return capacity_ - payload_bytes(); }
    size_t capacity() const { return capacity_; }
    // The smallest and the largest stamp of its events.
    uint64_t first_ns() const { return first_ns_; }
    uint64_t last_ns() const { return last_ns_; }

    bool named(uint32_t id) const { return id < named_.size() && named_[id]; }
    static size_t name_record_bytes(const std::string &name);
    // An event's records: the event's, and its namespace ids' if it has some.
    static size_t event_record_bytes(uint32_t data_len, bool has_namespace_ids = false);
    // The caller checked room() for them.
    void add_name(uint32_t id, const std::string &name);
    // `record.timestamp_ns` as the log holds it (CLOCK_REALTIME).
    // `stamp_offset_ns` is added to the record's stamp (a lane's monotonic
    // stamp made realtime), so a record is encoded where it lies.
    // `namespace_ids`: those of the event's thread, if it has some, in a
    // record of their own after the event's.
    void add_event(const pt_record &record, const void *data, int64_t stamp_offset_ns = 0,
                   const pt_namespace_ids *namespace_ids = nullptr);
    // Hands each event added so far, in the order added, to `event`: the
    // header add_event() laid out (its stamp as encoded) and its data.
    using EventVisitor = std::function<void(const pt_record &, const uint8_t *data)>;
    void for_each_event(const EventVisitor &event) const;
    // Logs whose blocks may overlap in time: every event stamped before
    // `complete_below_ns` is in this block or an earlier one. Its room is
    // kept apart from `capacity`.
    void add_watermark(uint64_t complete_below_ns);
    // What the block holds at a point, to take back what was added after it
    // (the names added since included).
    struct Mark {
        size_t size;
        uint32_t records;
        uint32_t events;
        uint64_t first_ns;
        uint64_t last_ns;
    };
    Mark mark() const { return {size_, records_, events_, first_ns_, last_ns_}; }
    void roll_back(const Mark &mark, std::span<const uint32_t> named_since);
    // Fills in the header: the block's bytes, in place.
    std::span<uint8_t> finish(uint64_t sequence);

private:
    uint8_t *grow(size_t bytes);
    void add_namespace_ids(const pt_namespace_ids &ids);
    static pt_record event_header(const uint8_t *record);

    uint8_t *memory_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
    std::bitset<POSIX_TRACE_EVENT_ID_LIMIT> named_;
    uint32_t records_ = 0; // events, names and watermarks
    uint32_t events_ = 0;
    uint64_t first_ns_ = 0;
    uint64_t last_ns_ = 0;
};

} // namespace posixtrace::log
