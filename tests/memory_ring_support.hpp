#pragma once
// A ring in ordinary memory for the tests of what reads rings (the merge,
// the log's runs), written record by record in a BPF ring buffer's layout.
#include <catch2/catch.hpp>
#include <linux/bpf.h>

#include <cstdint>
#include <memory>

#include "posixtrace.h"
#include "stream/record_ring.hpp"

namespace {

using posixtrace::RecordRing;

// A ring in ordinary memory, large enough that no test wraps it (so it
// need not be mapped twice), written here and read by RecordRing's own code.
class MemoryRing final : public RecordRing {
public:
    MemoryRing()
    {
        view(&consumer_, &producer_, reinterpret_cast<uint8_t *>(words_.get()), kBytes);
    }

    // Reserves a record (busy) with `data_len` bytes of data; its position.
    uint64_t reserve(uint32_t data_len)
    {
        uint64_t position = producer_;
        uint32_t length = uint32_t(sizeof(pt_record)) + data_len;
        header(position) = length | BPF_RINGBUF_BUSY_BIT;
        producer_ += span_of(length);
        return position;
    }
    // Stamps and commits the record reserved at `position` (its data left
    // as they are).
    void commit(uint64_t position, uint64_t timestamp_ns, uint32_t event_id = 100,
                uint32_t data_len = 0)
    {
        pt_record &record = record_at(position);
        record = {};
        record.timestamp_ns = timestamp_ns;
        record.event_id = event_id;
        record.data_len = data_len;
        header(position) &= ~BPF_RINGBUF_BUSY_BIT;
    }
    void discard(uint64_t position)
    {
        header(position) = (header(position) & ~BPF_RINGBUF_BUSY_BIT) | BPF_RINGBUF_DISCARD_BIT;
    }
    // A committed record whose header says it is `length` bytes long, too
    // short for a record's header: what a process writing over its own
    // lane could leave.
    uint64_t write_short(uint32_t length)
    {
        uint64_t position = producer_;
        header(position) = length;
        producer_ += span_of(length);
        return position;
    }
    uint64_t write(uint64_t timestamp_ns)
    {
        uint64_t position = reserve(0);
        commit(position, timestamp_ns);
        return position;
    }

private:
    static constexpr size_t kBytes = 1 << 16;

    uint32_t &header(uint64_t position) const
    {
        REQUIRE(position + BPF_RINGBUF_HDR_SZ + sizeof(pt_record) <= kBytes);
        return *reinterpret_cast<uint32_t *>(reinterpret_cast<uint8_t *>(words_.get()) + position);
    }
    pt_record &record_at(uint64_t position) const
    {
        return *reinterpret_cast<pt_record *>(reinterpret_cast<uint8_t *>(words_.get()) + position +
                                              BPF_RINGBUF_HDR_SZ);
    }

    std::unique_ptr<uint64_t[]> words_ = std::make_unique<uint64_t[]>(kBytes / 8);
    uint64_t producer_ = 0, consumer_ = 0;
};

} // namespace
