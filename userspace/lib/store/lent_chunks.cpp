#include "store/lent_chunks.hpp"

#include <linux/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "attributes/attributes.hpp"
#include "sources/lanes/chunk_pool.hpp"
#include "stages/record_kind.hpp"
#include "stream/record_ring.hpp"

namespace posixtrace {
namespace {

enum class Parsed { Record, Filler, Damaged };

constexpr uint32_t kPrefetchAheadBytes = 2048;

// The frame at `at`, read as the merge reads a lane's (RecordRing's rules)
// and checked against its chunk: `header` a copy of its record's header,
// `data` where its data is, and the frame's bytes in `span`. Nothing in a
// chunk lent is still being written.
Parsed parse(const LentChunks::Lent &chunk, uint32_t at, pt_record &header, const uint8_t *&data,
             uint32_t &span)
{
    if (chunk.to - at < BPF_RINGBUF_HDR_SZ)
        return Parsed::Damaged;
    const uint8_t *frame = chunk.memory.bytes + at;
    uint32_t length = __atomic_load_n(reinterpret_cast<const uint32_t *>(frame), __ATOMIC_RELAXED);
    RecordRing::Frame read = RecordRing::frame_of(length, chunk.to - at);
    span = uint32_t(read.size);
    if (read.slot == RecordRing::Slot::Discarded)
        return Parsed::Filler;
    if (read.slot != RecordRing::Slot::Committed)
        return Parsed::Damaged;
    std::memcpy(&header, frame + BPF_RINGBUF_HDR_SZ, PT_RECORD_HEADER_SIZE);
    // a lane's writer never claims namespace ids: only the kernel's do
    if ((header.flags & PT_RECORD_NAMESPACE_IDS) || !RecordRing::holds_data(length, header))
        return Parsed::Damaged;
    data = frame + BPF_RINGBUF_HDR_SZ + PT_RECORD_HEADER_SIZE;
    return Parsed::Record;
}

} // namespace

LentChunks::LentChunks() : pid_(getpid()) {}

void LentChunks::add(const void *lane, const Lent &chunk)
{
    oldest_known_ = false;
    auto holding = std::find_if(lanes_.begin(), lanes_.end(),
                                [lane](const Lane &each) { return each.key == lane; });
    if (holding == lanes_.end())
        holding = lanes_.insert(lanes_.end(), Lane{lane, {}, false, 0, {}});
    holding->chunks.push_back(chunk);
    bytes_ += chunk.bytes;
    if (holding->chunks.size() > 1)
        return;
    find_next(*holding);
    if (holding->chunks.empty()) // nothing in it could be read
        lanes_.erase(holding);
}

bool LentChunks::follows(const void *lane, uint64_t first_ns) const
{
    auto holding = std::find_if(lanes_.begin(), lanes_.end(),
                                [lane](const Lane &each) { return each.key == lane; });
    return holding == lanes_.end() || first_ns >= holding->chunks.back().last_ns;
}

// Each record is stamped no earlier than the one before it in its chunk,
// and no later than the chunk's latest when lent: the order the merge
// placed the chunk in.
void LentChunks::find_next(Lane &lane)
{
    lane.has_next = false;
    while (!lane.chunks.empty()) {
        Lent &chunk = lane.chunks.front();
        while (chunk.from < chunk.to) {
            uint32_t span = 0;
            Parsed parsed = parse(chunk, chunk.from, lane.next, lane.next_data, span);
            if (parsed == Parsed::Filler) {
                chunk.from += span;
                continue;
            }
            if (parsed == Parsed::Damaged || !still_as_lent(chunk, lane.next))
                break;
            lane.next_span = span;
            lane.has_next = true;
            // A reader walks the chunk in order, memory another CPU wrote.
            if (chunk.to - chunk.from > kPrefetchAheadBytes)
                __builtin_prefetch(chunk.memory.bytes + chunk.from + kPrefetchAheadBytes);
            return;
        }
        damaged_ += chunk.events; // what it held and could not be read
        give_back_front(lane);
    }
}

// A user event, as every record of the chunk was when lent, in its place:
// no older than the one before it, nor than what was read from any lane,
// and no later than the chunk's latest.
bool LentChunks::still_as_lent(const Lent &chunk, const pt_record &record) const
{
    uint64_t stamp = record.timestamp_ns;
    return chunk.events > 0 && stamp >= chunk.read_ns && stamp >= read_floor_ns_ &&
           stamp <= chunk.last_ns && classify(record) == RecordKind::UserEvent &&
           !(record.flags & PT_RECORD_NOTICE_ONLY);
}

void LentChunks::give_back_front(Lane &lane)
{
    Lent &chunk = lane.chunks.front();
    bytes_ -= chunk.bytes;
    if (getpid() == pid_)
        chunk.memory.pool->give_lent(chunk.memory.chunk);
    lane.chunks.pop_front();
}

// Looked for again only once the lanes changed: a reader asks at every
// read.
size_t LentChunks::oldest_lane()
{
    if (oldest_known_)
        return oldest_;
    oldest_ = kNoLane;
    for (size_t index = 0; index < lanes_.size(); ++index)
        if (lanes_[index].has_next && (oldest_ == kNoLane || lanes_[index].next.timestamp_ns <
                                                                 lanes_[oldest_].next.timestamp_ns))
            oldest_ = index;
    oldest_known_ = true;
    return oldest_;
}

std::optional<StoredEvent> LentChunks::oldest_before(uint64_t before_ns)
{
    size_t index = oldest_lane();
    if (index == kNoLane || lanes_[index].next.timestamp_ns >= before_ns)
        return std::nullopt;
    const Lane &oldest = lanes_[index];
    return StoredEvent{&oldest.next, oldest.next_data, oldest.next.timestamp_ns};
}

void LentChunks::pop_oldest()
{
    oldest_known_ = false;
    Lane &lane = lanes_[oldest_];
    Lent &chunk = lane.chunks.front();
    chunk.from += lane.next_span;
    chunk.read_ns = lane.next.timestamp_ns;
    --chunk.events;
    find_next(lane);
    if (lane.chunks.empty()) { // a lane that lends nothing more costs no look
        lanes_[oldest_] = std::move(lanes_.back());
        lanes_.pop_back();
    }
}

// The events of `chunk` from its first record stamped at or after
// `from_ns` on, and where that one starts; what cannot be read any more
// is counted too (it goes with them).
uint64_t LentChunks::events_from(const Lent &chunk, uint64_t from_ns, uint32_t &cut_at,
                                 size_t &cut_bytes) const
{
    uint32_t at = chunk.from;
    uint64_t before = 0;
    pt_record header;
    const uint8_t *data = nullptr;
    cut_at = chunk.to;
    cut_bytes = 0;
    while (at < chunk.to) {
        uint32_t span = 0;
        Parsed parsed = parse(chunk, at, header, data, span);
        if (parsed == Parsed::Damaged)
            break;
        if (parsed == Parsed::Record) {
            if (header.timestamp_ns >= from_ns) {
                cut_at = at;
                break;
            }
            ++before;
            cut_bytes += stored_event_size(header.data_len);
        }
        at += span;
    }
    cut_bytes = chunk.bytes - std::min(cut_bytes, chunk.bytes);
    return chunk.events - std::min<uint64_t>(before, chunk.events);
}

uint64_t LentChunks::cut_from(uint64_t from_ns)
{
    oldest_known_ = false;
    uint64_t cut = 0;
    for (Lane &lane : lanes_) {
        for (Lent &chunk : lane.chunks) {
            if (chunk.last_ns < from_ns)
                continue;
            uint32_t cut_at = 0;
            size_t cut_bytes = 0;
            uint64_t events = events_from(chunk, from_ns, cut_at, cut_bytes);
            cut += events;
            chunk.events -= uint32_t(events);
            chunk.to = cut_at;
            chunk.bytes -= cut_bytes;
            bytes_ -= cut_bytes;
        }
        // A head still in its chunk stays as read: the memory is not read
        // again for it.
        const Lent &front = lane.chunks.front();
        if (!lane.has_next || front.from >= front.to)
            find_next(lane);
    }
    std::erase_if(lanes_, [](const Lane &lane) { return lane.chunks.empty(); });
    return cut;
}

void LentChunks::clear()
{
    oldest_known_ = false;
    for (Lane &lane : lanes_)
        while (!lane.chunks.empty())
            give_back_front(lane);
    lanes_.clear();
    bytes_ = 0;
}

} // namespace posixtrace
