#include "log/block_encoder.hpp"

#include <algorithm>
#include <cstring>

namespace posixtrace::log {
namespace {

// A payload is a few dozen bytes: whole 16-byte words, the last one
// overlapping the one before. The compiler's own copy of a length it
// cannot see starts with a string instruction slow to start.
void copy_payload(uint8_t *to, const uint8_t *from, size_t length)
{
    if (length < 16) {
        for (size_t at = 0; at < length; ++at)
            to[at] = from[at];
        return;
    }
    for (size_t at = 0; at + 16 < length; at += 16)
        std::memcpy(to + at, from + at, 16);
    std::memcpy(to + length - 16, from + length - 16, 16);
}

} // namespace

BlockEncoder::BlockEncoder(uint8_t *memory, size_t capacity)
    : memory_(memory), size_(kBlockHeaderSize), capacity_(capacity)
{
}

uint8_t *BlockEncoder::grow(size_t bytes)
{
    uint8_t *at = memory_ + size_;
    size_ += bytes;
    return at;
}

size_t BlockEncoder::name_record_bytes(const std::string &name)
{
    return padded8(kNameRecordHeader + std::min(name.size(), kMaxNameLength));
}

size_t BlockEncoder::event_record_bytes(uint32_t data_len, bool has_namespace_ids)
{
    return padded8(kEventRecordHeader + std::min<size_t>(data_len, kMaxEventData)) +
           (has_namespace_ids ? kNamespaceIdsRecordSize : 0);
}

void BlockEncoder::add_name(uint32_t id, const std::string &name)
{
    size_t length = std::min(name.size(), kMaxNameLength);
    size_t size = padded8(kNameRecordHeader + length);
    uint8_t *record = grow(size);
    std::memset(record + kNameRecordHeader + length, 0, size - kNameRecordHeader - length);
    store<uint32_t>(record, uint32_t(size));
    store<uint16_t>(record + 6, 0);
    store<uint16_t>(record + 4, kRecordName);
    store<uint32_t>(record + 8, id);
    store<uint32_t>(record + 12, uint32_t(length));
    std::memcpy(record + kNameRecordHeader, name.data(), length);
    if (id < named_.size())
        named_[id] = true;
    ++records_;
}

void BlockEncoder::add_event(const pt_record &record, const void *data, int64_t stamp_offset_ns,
                             const pt_namespace_ids *namespace_ids)
{
    uint64_t timestamp_ns = uint64_t(int64_t(record.timestamp_ns) + stamp_offset_ns);
    size_t length = std::min<size_t>(record.data_len, kMaxEventData);
    size_t used = kEventRecordHeader + length, size = padded8(used);
    uint8_t *out = grow(size); // every byte is written below
    std::memset(out + used, 0, size - used);
    store<uint32_t>(out, uint32_t(size));
    store<uint16_t>(out + 4, kRecordEvent);
    store<uint16_t>(out + 6, record.flags & PT_RECORD_TRUNCATED ? kEventTruncated : 0);
    store<uint32_t>(out + 8, record.event_id);
    store<uint32_t>(out + 12, uint32_t(length));
    store<uint64_t>(out + 16, timestamp_ns);
    store<uint32_t>(out + 24, record.pid);
    store<uint32_t>(out + 28, record.tid);
    store<uint64_t>(out + 32, record.thread_id);
    store<uint64_t>(out + 40, record.prog_address);
    copy_payload(out + kEventRecordHeader, static_cast<const uint8_t *>(data), length);
    first_ns_ = events_ == 0 ? timestamp_ns : std::min<uint64_t>(first_ns_, timestamp_ns);
    last_ns_ = std::max<uint64_t>(last_ns_, timestamp_ns);
    ++records_;
    ++events_;
    if (namespace_ids)
        add_namespace_ids(*namespace_ids);
}

void BlockEncoder::add_namespace_ids(const pt_namespace_ids &ids)
{
    uint8_t *record = grow(kNamespaceIdsRecordSize);
    store<uint32_t>(record, uint32_t(kNamespaceIdsRecordSize));
    store<uint16_t>(record + 4, kRecordNamespaceIds);
    store<uint16_t>(record + 6, 0);
    store<uint32_t>(record + 8, ids.pid);
    store<uint32_t>(record + 12, ids.tid);
    ++records_;
}

// The block's own records, in memory only the encoder writes; a size that
// would leave them still ends the walk.
void BlockEncoder::for_each_event(const EventVisitor &event) const
{
    std::span<const uint8_t> records{memory_ + kBlockHeaderSize, payload_bytes()};
    for (size_t at = 0; at + 16 <= records.size();) {
        const uint8_t *record = records.data() + at;
        uint32_t size = load<uint32_t>(record);
        if (size < 16 || size > records.size() - at)
            return;
        at += size;
        if (load<uint16_t>(record + 4) != kRecordEvent || size < kEventRecordHeader)
            continue;
        pt_record header = event_header(record);
        if (kEventRecordHeader + header.data_len <= size)
            event(header, record + kEventRecordHeader);
    }
}

// The inverse of add_event(), for a record it laid out.
pt_record BlockEncoder::event_header(const uint8_t *record)
{
    pt_record header{};
    header.flags = load<uint16_t>(record + 6) & kEventTruncated ? PT_RECORD_TRUNCATED : 0;
    header.event_id = load<uint32_t>(record + 8);
    header.data_len = load<uint32_t>(record + 12);
    header.timestamp_ns = load<uint64_t>(record + 16);
    header.pid = load<uint32_t>(record + 24);
    header.tid = load<uint32_t>(record + 28);
    header.thread_id = load<uint64_t>(record + 32);
    header.prog_address = load<uint64_t>(record + 40);
    return header;
}

void BlockEncoder::add_watermark(uint64_t complete_below_ns)
{
    uint8_t *record = grow(kWatermarkRecordSize);
    store<uint32_t>(record, uint32_t(kWatermarkRecordSize));
    store<uint16_t>(record + 4, kRecordWatermark);
    store<uint16_t>(record + 6, 0);
    store<uint64_t>(record + 8, complete_below_ns);
    ++records_;
}

void BlockEncoder::roll_back(const Mark &mark, std::span<const uint32_t> named_since)
{
    size_ = mark.size;
    records_ = mark.records;
    events_ = mark.events;
    first_ns_ = mark.first_ns;
    last_ns_ = mark.last_ns;
    for (uint32_t id : named_since)
        if (id < named_.size())
            named_[id] = false;
}

std::span<uint8_t> BlockEncoder::finish(uint64_t sequence)
{
    uint8_t *header = memory_;
    store<uint32_t>(header, kBlockMagic);
    store<uint32_t>(header + 4, 0); // the CRC, once the writer has the whole block
    store<uint64_t>(header + 8, sequence);
    store<uint32_t>(header + 16, uint32_t(payload_bytes()));
    store<uint32_t>(header + 20, records_);
    store<uint64_t>(header + 24, first_ns_);
    store<uint64_t>(header + 32, last_ns_);
    return {memory_, size_};
}

} // namespace posixtrace::log
