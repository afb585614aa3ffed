#pragma once
// A loop ring (posixtrace.h) in ordinary memory, written by the tests as
// the BPF programs write theirs (stream.bpf.h), for what reads it through
// LoopRingMirror.
#include <linux/bpf.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "posixtrace.h"

namespace {

constexpr size_t kRingBytes = 4 * PT_LOOP_CHUNK_BYTES;
constexpr uint64_t kKey = 0x5eed'0f7a'95c3'1d2bu;
constexpr uint32_t kRecordData = 64;

// One loop ring's entry, written as the programs write it.
class LoopRingWriter {
public:
    LoopRingWriter() : entry_(PT_LOOP_META_BYTES + kRingBytes + PT_LOOP_SLACK_BYTES) {}
    const uint8_t *entry() const { return entry_.data(); }

    // Reserves a record of kRecordData bytes: its position, the header
    // still holding what the ring held there before.
    uint64_t reserve()
    {
        uint64_t head = meta().head, start = head;
        if ((head & (PT_LOOP_CHUNK_BYTES - 1)) + span() > PT_LOOP_CHUNK_BYTES)
            start = (head + PT_LOOP_CHUNK_BYTES - 1) & ~uint64_t(PT_LOOP_CHUNK_BYTES - 1);
        __atomic_store_n(&meta().head, start + span(), __ATOMIC_RELEASE);
        if (start != head)
            write_header(head,
                         uint32_t(start - head - sizeof(pt_loop_header)) | BPF_RINGBUF_DISCARD_BIT |
                             PT_LOOP_PADDING,
                         0);
        return start;
    }
    // Writes the record reserved at `position` busy, numbered and stamped.
    void write(uint64_t position, uint64_t stamp)
    {
        uint32_t length = uint32_t(span() - sizeof(pt_loop_header)) | BPF_RINGBUF_BUSY_BIT;
        write_header(position, length, uint32_t(meta().sequence++));
        pt_record record{};
        record.timestamp_ns = stamp;
        record.data_len = kRecordData;
        std::memcpy(at(position) + sizeof(pt_loop_header), &record, sizeof record);
    }
    void commit(uint64_t position) { header(position)->length &= ~BPF_RINGBUF_BUSY_BIT; }
    void emit(uint64_t stamp)
    {
        uint64_t position = reserve();
        write(position, stamp);
        commit(position);
    }
    // What a traced process's data left at `position` in an earlier round:
    // a committed header, numbered, tagged as for `tagged_as`.
    void forge(uint64_t position, uint64_t tagged_as)
    {
        pt_loop_header forged{uint32_t(span() - sizeof(pt_loop_header)), 7, tagged_as ^ kKey};
        std::memcpy(at(position), &forged, sizeof forged);
    }
    pt_loop_header *header(uint64_t position)
    {
        return reinterpret_cast<pt_loop_header *>(at(position));
    }
    uint64_t head() { return meta().head; }
    // Where the next record would end (past a chunk's padding, if it must).
    uint64_t next_end()
    {
        uint64_t start = meta().head;
        if ((start & (PT_LOOP_CHUNK_BYTES - 1)) + span() > PT_LOOP_CHUNK_BYTES)
            start = (start + PT_LOOP_CHUNK_BYTES - 1) & ~uint64_t(PT_LOOP_CHUNK_BYTES - 1);
        return start + span();
    }

    // Bytes each record takes.
    static constexpr uint64_t span()
    {
        return (sizeof(pt_loop_header) + PT_RECORD_HEADER_SIZE + kRecordData + 15) & ~15ull;
    }

private:
    pt_loop_ring_meta &meta() { return *reinterpret_cast<pt_loop_ring_meta *>(entry_.data()); }
    uint8_t *at(uint64_t position)
    {
        return entry_.data() + PT_LOOP_META_BYTES + (position & (kRingBytes - 1));
    }
    void write_header(uint64_t position, uint32_t length, uint32_t number)
    {
        pt_loop_header *to = header(position);
        to->length = length;
        to->sequence = number;
        __atomic_store_n(&to->tag, position ^ kKey, __ATOMIC_RELEASE);
    }

    std::vector<uint8_t> entry_;
};

} // namespace
