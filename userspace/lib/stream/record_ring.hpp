#pragma once
#include <linux/bpf.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "events/namespace_ids.hpp"
#include "posixtrace.h"
#include "sources/lent_chunk.hpp"

namespace posixtrace {

// What the merge reads from (RingMerger): a ring of records laid out as a BPF
// ring buffer's, each behind an 8-byte header (its length, a busy bit while
// it is being written, a discard bit), looked at in place by position, as
// the producer and consumer counters count bytes. Its owner maps the memory
// and shows it here (view()): the kernel's per-CPU rings (RingReader), the
// process's own (LocalRing). A ring written by other means than the kernel
// follows the same protocol (a record is reserved, busy, before it is
// stamped, and the producer position covers it only once its header says
// busy), so the merge's argument (docs/architecture.md, "Ordering") holds
// for it as is. Reading a record is the same code for every kind, inline.
class RecordRing {
public:
    virtual ~RecordRing() = default;
    RecordRing(const RecordRing &) = delete;
    RecordRing &operator=(const RecordRing &) = delete;

    // False if the ring could not be mapped; the merge then skips it.
    bool mapped() const { return data_ != nullptr; }
    // How far the producer has reserved (acquire: the headers below it are
    // readable).
    uint64_t producer() const { return __atomic_load_n(producer_pos_, __ATOMIC_ACQUIRE); }
    // The consumer position published so far.
    uint64_t released() const { return released_; }
    // What the merge may read from `scanned` on: up to the producer
    // position, but for a ring whose writer takes back records not read yet
    // (LocalRing under POSIX_TRACE_LOOP). That one lets the merge claim a
    // window at a time (`more`: there is more past `end` for the next
    // call), and moves `scanned` past what its writer took back. Nothing at
    // or past `end` is looked at until the next call.
    struct Readable {
        uint64_t end;
        bool more = false;
        // What the writer takes back lies past the latest claim, so it was
        // reserved after it. `claimed`: this call claimed what was reserved
        // until now; `taken_back`: the writer had taken records back since
        // the claim before.
        bool claimed = true;
        bool taken_back = false;
    };
    virtual Readable readable(uint64_t & /*scanned*/) { return {producer()}; }
    // Called by each round of the merge first, after it read the clock and
    // before it reads the producer position: a ring whose records the merge
    // reads from a copy (LoopRingMirror) brings the copy up to date.
    virtual void refresh() {}

    // Damaged: committed, but its header or the data it claims do not fit
    // in its slot, or the slot its header claims runs past the end of its
    // chunk (then the rest of the chunk is passed). Only a ring in the
    // process's own memory (LocalRing), that the process wrote over, can
    // hold one: it is passed, never read.
    enum class Slot { Committed, Discarded, Busy, Damaged };
    struct Record {
        Slot slot;
        const pt_record *record; // when Committed
        uint64_t size;           // bytes to the next record
    };
    // What is at `position`, which must be below readable().end.
    Record at(uint64_t position) const
    {
        const uint8_t *header = address_of(position);
        uint32_t length =
            __atomic_load_n(reinterpret_cast<const uint32_t *>(header), __ATOMIC_ACQUIRE);
        // A writer never lets a record cross a chunk's end: one that claims
        // to would move the reader into memory of another chunk, or none.
        uint64_t room = chunk_table_ ? bytes_ - (position & (bytes_ - 1)) : UINT64_MAX;
        Frame frame = frame_of(length, room);
        if (frame.slot != Slot::Committed)
            return {frame.slot, nullptr, frame.size};
        const auto *record = reinterpret_cast<const pt_record *>(header + BPF_RINGBUF_HDR_SZ);
        if (!holds_data(length, *record) ||
            ((record->flags & PT_RECORD_NAMESPACE_IDS) && !written_by_kernel_))
            return {Slot::Damaged, nullptr, frame.size};
        return {Slot::Committed, record, frame.size};
    }

    // The rules of a frame, for every reader of one (at(), and the reader
    // of a lane's chunk kept in place after it left its ring): its slot and
    // the bytes to the next frame, from its header's length word and the
    // `room` left before its chunk's end. A committed frame's record must
    // also hold the data its header claims (holds_data, asked of the header
    // the reader goes on with).
    struct Frame {
        Slot slot;
        uint64_t size;
    };
    static Frame frame_of(uint32_t length, uint64_t room)
    {
        uint64_t size = span_of(length & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT));
        if (size > room)
            return {Slot::Damaged, room};
        if (length & BPF_RINGBUF_BUSY_BIT)
            return {Slot::Busy, size};
        if (length & BPF_RINGBUF_DISCARD_BIT)
            return {Slot::Discarded, size};
        if (length < PT_RECORD_HEADER_SIZE)
            return {Slot::Damaged, size};
        return {Slot::Committed, size};
    }
    static bool holds_data(uint32_t length, const pt_record &header)
    {
        return length - PT_RECORD_HEADER_SIZE >= record_payload_bytes(header);
    }

    // A ring made of chunks (LocalRing): their size, a power of two, and no
    // record crosses from one to the next; 0 for others. A whole chunk's
    // records may be taken at once (RingMerger::Sinks::chunk).
    virtual uint64_t chunk_bytes() const { return 0; }
    // The whole chunk at `position` (a chunk's start; every record in it
    // committed, none delivered) is lent to the caller; nullopt: the ring
    // keeps it, and its records are read as any.
    virtual std::optional<LentChunk> lend_chunk(uint64_t /*position*/) { return std::nullopt; }

    // Whether every record is stamped no earlier than the one before it (a
    // ring with one writer at a time, which stamps after it reserves); the
    // kernel's are not (a program interrupts another between its
    // reservation and its stamp).
    virtual bool in_timestamp_order() const { return false; }

    // The record at `position` is busy and has been at every look since
    // the merge reached it. True if its writer will never finish it and it
    // was given up: the merge passes it and never reads that position
    // again, whatever the writer does later, and the caller of the merge
    // reports it lost (RingMerger::pass_abandoned_records).
    // A kernel ring's writer is a BPF program, which always finishes.
    virtual bool give_up_stalled(uint64_t /*position*/) { return false; }

    // Gives the producer back the space before `position`.
    virtual void release(uint64_t position)
    {
        if (position == released_)
            return;
        released_ = position;
        __atomic_store_n(consumer_pos_, position, __ATOMIC_RELEASE);
    }

    // Bytes a record of `length` (header length field) takes in the ring.
    static uint64_t span_of(uint32_t length)
    {
        return (uint64_t(length) + BPF_RINGBUF_HDR_SZ + 7) & ~uint64_t(7);
    }

protected:
    RecordRing() = default;
    // The ring's counters and its data (`bytes`, a power of two), once the
    // owner has mapped them. A record that runs past the end must continue
    // at the start: the kernel maps its rings' data twice in a row; the
    // process's own rings never let a record wrap.
    void view(uint64_t *consumer_pos, const uint64_t *producer_pos, const uint8_t *data,
              size_t bytes)
    {
        consumer_pos_ = consumer_pos;
        producer_pos_ = producer_pos;
        data_ = data;
        bytes_ = bytes;
        released_ = __atomic_load_n(consumer_pos_, __ATOMIC_ACQUIRE);
    }
    // The kernel's programs write this ring: its records may carry the ids
    // of their threads' PID namespaces (no other writer's may).
    void trust_namespace_ids() { written_by_kernel_ = true; }
    // A ring whose memory is a sequence of chunks of 2^`chunk_shift` bytes
    // at `base`: the chunk of position p is entry (p >> chunk_shift) &
    // (`entries` - 1) of `table` (entries a power of two; the bits of
    // kChunkFlags of an entry are not the chunk's). No record crosses the
    // end of a chunk.
    static constexpr uint32_t kChunkFlags = 0x8000'0000u;
    void view_chunks(uint64_t *consumer_pos, const uint64_t *producer_pos, const uint8_t *base,
                     unsigned chunk_shift, const uint32_t *table, uint32_t entries)
    {
        view(consumer_pos, producer_pos, base, size_t(1) << chunk_shift);
        chunk_table_ = table;
        chunk_shift_ = chunk_shift;
        table_mask_ = entries - 1;
    }
    // The same ring as `other`, read from here (one reader at a time).
    void view_like(const RecordRing &other)
    {
        view(other.consumer_pos_, other.producer_pos_, other.data_, other.bytes_);
        chunk_table_ = other.chunk_table_;
        chunk_shift_ = other.chunk_shift_;
        table_mask_ = other.table_mask_;
    }
    const uint8_t *address_of(uint64_t position) const
    {
        if (!chunk_table_)
            return data_ + (position & (bytes_ - 1));
        uint32_t chunk = __atomic_load_n(&chunk_table_[(position >> chunk_shift_) & table_mask_],
                                         __ATOMIC_RELAXED) &
                         ~kChunkFlags;
        return data_ + (size_t(chunk) << chunk_shift_) + (position & (bytes_ - 1));
    }

private:
    bool written_by_kernel_ = false;
    uint64_t *consumer_pos_ = nullptr;
    const uint64_t *producer_pos_ = nullptr;
    const uint8_t *data_ = nullptr;
    size_t bytes_ = 0;
    uint64_t released_ = 0;
    const uint32_t *chunk_table_ = nullptr;
    unsigned chunk_shift_ = 0;
    uint32_t table_mask_ = 0;
};

} // namespace posixtrace
