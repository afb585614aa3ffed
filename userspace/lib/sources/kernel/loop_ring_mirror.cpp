#include "sources/kernel/loop_ring_mirror.hpp"

#include <linux/bpf.h>

#include <algorithm>
#include <cstring>

namespace posixtrace {
namespace {

constexpr uint32_t kLengthBits =
    uint32_t(BPF_RINGBUF_BUSY_BIT) | uint32_t(BPF_RINGBUF_DISCARD_BIT) | PT_LOOP_PADDING;
constexpr uint64_t kChunkMask = PT_LOOP_CHUNK_BYTES - 1;
constexpr uint64_t kHeaderBytes = sizeof(pt_loop_header);
// Copies a look makes when the programs overtake it each time; the next
// look tries again.
constexpr int kCopyAttempts = 4;

uint64_t load_acquire(const uint64_t &value)
{
    return __atomic_load_n(&value, __ATOMIC_ACQUIRE);
}

} // namespace

// What the ring numbered and reserved before the stream began is not the
// stream's: the copy starts at the head, and counts from the number after.
LoopRingMirror::LoopRingMirror(const uint8_t *entry, size_t ring_bytes, uint64_t tag_key,
                               std::atomic<uint64_t> &overwritten)
    : meta_(reinterpret_cast<const pt_loop_ring_meta *>(entry)),
      source_(entry + PT_LOOP_META_BYTES), bytes_(ring_bytes), mirror_bytes_(2 * ring_bytes),
      tag_key_(tag_key), overwritten_(overwritten),
      mirror_(mirror_bytes_, "posixtrace loop ring copy")
{
    head_ = frontier_ = consumer_ = gap_from_ = gap_to_ = load_acquire(meta_->head);
    counted_to_ = load_acquire(meta_->sequence);
    if (mirror_.valid())
        view(&consumer_, &head_, mirror_.data(), mirror_bytes_);
    trust_namespace_ids();
}

const pt_loop_header *LoopRingMirror::source_header(uint64_t position) const
{
    return reinterpret_cast<const pt_loop_header *>(source_ + (position & (bytes_ - 1)));
}

// Called by the merge before it reads the producer position, after it read
// the clock: every record reserved after the head read here is stamped
// after that reading.
void LoopRingMirror::refresh()
{
    if (!mirror_.valid())
        return;
    ++looks_;
    uint64_t sequence = load_acquire(meta_->sequence);
    uint64_t head = load_acquire(meta_->head);
    Copied copied{frontier_, false, false};
    more_ = false;
    for (int attempt = 0; attempt < kCopyAttempts; ++attempt) {
        if (head - frontier_ > bytes_)
            pass_overwritten(resume_past_writers(head));
        size_t seen_before = seen_.size();
        copied = copy_from_frontier(head, seen_);
        // The copy stands if the programs had not come round to its start.
        std::atomic_thread_fence(std::memory_order_acquire);
        uint64_t head_after = load_acquire(meta_->head);
        if (head_after - frontier_ > bytes_) {
            seen_.resize(seen_before); // not seen: overwritten
            head = head_after;         // read after the clock too
            pass_overwritten(resume_past_writers(head));
            copied = {frontier_, false, false};
            continue;
        }
        frontier_ = copied.end;
        // No program writes such a header: passed as overwritten, with the
        // rest of its chunk, once the programs are past it.
        uint64_t next_chunk = (frontier_ + PT_LOOP_CHUNK_BYTES) & ~kChunkMask;
        if (!copied.damaged || next_chunk > head)
            break;
        pass_overwritten(next_chunk);
    }
    __atomic_store_n(&head_, head, __ATOMIC_RELEASE);
    claimed_ = copied.whole && frontier_ == head;
    if (claimed_)
        account(sequence);
}

LoopRingMirror::Copied LoopRingMirror::copy_from_frontier(uint64_t head,
                                                          std::vector<uint32_t> &numbers)
{
    uint64_t position = frontier_;
    uint64_t room_end = released() + mirror_bytes_;
    while (position < head) {
        const pt_loop_header *header = source_header(position);
        // Reserved and not written yet: the bytes of an older round.
        if (__atomic_load_n(&header->tag, __ATOMIC_ACQUIRE) != (position ^ tag_key_))
            return {position, false, false};
        uint32_t length = __atomic_load_n(&header->length, __ATOMIC_ACQUIRE);
        if (length & BPF_RINGBUF_BUSY_BIT)
            return {position, false, false};
        uint32_t number = header->sequence;
        uint64_t span = (kHeaderBytes + (length & ~kLengthBits) + 15) & ~uint64_t(15);
        bool padding = length & PT_LOOP_PADDING;
        // A writer never makes one: the programs wrote over it as it was read.
        if ((position & kChunkMask) + span > PT_LOOP_CHUNK_BYTES ||
            (!padding && span < kHeaderBytes + PT_RECORD_HEADER_SIZE))
            return {position, false, true};
        if (position + span > room_end) {
            more_ = true; // the merge releases some, then the next look goes on
            return {position, false, false};
        }
        uint32_t copied_length = uint32_t(span - BPF_RINGBUF_HDR_SZ);
        if (length & (BPF_RINGBUF_DISCARD_BIT | PT_LOOP_PADDING))
            copied_length |= BPF_RINGBUF_DISCARD_BIT;
        uint8_t *to = mirror_at(position);
        std::memcpy(to, &copied_length, sizeof copied_length);
        std::memcpy(to + BPF_RINGBUF_HDR_SZ, header + 1, span - kHeaderBytes);
        if (!padding)
            numbers.push_back(number);
        position += span;
    }
    return {position, true, false};
}

// A little past where the programs write over now, so that the copy can
// finish before they come round to it.
uint64_t LoopRingMirror::resume_past_writers(uint64_t head) const
{
    return (head - bytes_ + bytes_ / 8 + kChunkMask) & ~kChunkMask;
}

// The records copied past a stretch the merge has not passed yet will not
// be read: counted here.
void LoopRingMirror::pass_overwritten(uint64_t resume)
{
    if (resume <= frontier_)
        return;
    if (gap_from_ == gap_to_) {
        gap_from_ = frontier_;
        gap_signaled_ = false;
    } else {
        for (uint64_t position = gap_to_; position < frontier_;) {
            RecordRing::Record record = at(position);
            overwritten_.fetch_add(record.slot == Slot::Committed, std::memory_order_relaxed);
            position += record.size;
        }
    }
    gap_to_ = frontier_ = resume;
    stretch_look_ = looks_;
}

// Every record numbered below `sequence` was reserved before the head this
// look copied up to, and is whole: copied, or overwritten.
void LoopRingMirror::account(uint64_t sequence)
{
    uint64_t numbered = sequence - counted_to_;
    uint64_t seen = 0;
    std::erase_if(seen_, [&](uint32_t number) {
        if (int32_t(number - uint32_t(sequence)) >= 0)
            return false; // numbered after the sequence was read: the next look's
        seen += int32_t(number - uint32_t(counted_to_)) >= 0;
        return true;
    });
    // Each number is seen once; the bound only keeps a torn copy that
    // passed the checks from counting a wrapped-around total.
    overwritten_.fetch_add(numbered - std::min(seen, numbered), std::memory_order_relaxed);
    counted_to_ = sequence;
    accounted_look_ = looks_;
}

// A stretch overwritten comes first as taken back: the merge drops what it
// holds and what was copied before the stretch; then the merge goes on
// past it, once the records overwritten are counted and the count read (a
// look after the one that found the stretch counted them). Meanwhile the
// merge claims nothing here, which holds its safe point before the records
// past the stretch and the report where the stretch was. Were they the
// ring's oldest while the programs need room, they are taken back in turn.
RecordRing::Readable LoopRingMirror::readable(uint64_t &scanned)
{
    if (gap_from_ < gap_to_) {
        if (!gap_signaled_) {
            gap_signaled_ = true;
            return {gap_from_, true, claimed_, true};
        }
        if (scanned < gap_from_)
            return {gap_from_, true, claimed_, false};
        scanned = gap_from_ = gap_to_;
    }
    if (stretch_unreported()) {
        if (more_ && frontier_ > scanned)
            return {frontier_, false, false, true};
        return {scanned, more_, false, false};
    }
    return {frontier_, more_, claimed_, false};
}

} // namespace posixtrace
