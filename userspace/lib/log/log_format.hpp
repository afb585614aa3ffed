#pragma once
// The trace log file format, versions 1.1 and 2.1: constants and
// little-endian field access shared by the writer and the reader.
// docs/log-format.md is the specification; the offsets here follow its
// tables.
#include <libdeflate.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "attributes/trace_origin.hpp"

namespace posixtrace::log {

inline constexpr char kMagic[8] = {'P', 'T', 'R', 'C', 'L', 'O', 'G', 0};
// 1: blocks follow each other in time. 2: blocks may overlap in time, and
// watermark records say how far the events are complete.
inline constexpr uint16_t kMajorVersionInOrder = 1;
inline constexpr uint16_t kMajorVersionOverlapping = 2;
// Minor 1: the header ends with the stream's origin (put_origin).
inline constexpr uint16_t kMinorVersion = 1;
inline constexpr uint16_t kMinorVersionWithOrigin = 1;
// Version 2: the most bytes of blocks a reader holds because their events
// are not complete yet (past the latest watermark); a writer stays within
// it, a log that asks for more is damaged.
inline constexpr size_t kMaxOverlapBytes = 64u << 20;
inline constexpr size_t kHeaderFixedSize = 224;

inline constexpr uint32_t kBlockMagic = 0x4B425450;   // "PTBK"
inline constexpr uint32_t kTrailerMagic = 0x52545450; // "PTTR"
inline constexpr char kFooterMagic[8] = {'P', 'T', 'E', 'N', 'D', 0, 0, 0};
inline constexpr size_t kBlockHeaderSize = 40;
inline constexpr size_t kMaxBlockPayload = 1u << 20;
// LOOP slots: the writer's smallest is half the smallest log size, its
// largest one block; a reader indexes every slot on opening and on every
// rewind, so their number is bounded whatever log-max-size asks for.
inline constexpr uint32_t kMinLoopSlotSize = 2048;
inline constexpr uint32_t kMaxLoopSlotSize = kMaxBlockPayload;
inline constexpr uint64_t kMaxLoopSlots = 1u << 16;
inline constexpr size_t kTrailerFixedSize = 96;
inline constexpr size_t kFooterSize = 24;

inline constexpr uint16_t kRecordEvent = 1;
inline constexpr uint16_t kRecordName = 2;
inline constexpr uint16_t kRecordWatermark = 3;
inline constexpr size_t kWatermarkRecordSize = 16;
// The PID namespace ids of the event record right before it.
inline constexpr uint16_t kRecordNamespaceIds = 4;
inline constexpr size_t kNamespaceIdsRecordSize = 16;
inline constexpr size_t kEventRecordHeader = 48;
inline constexpr size_t kNameRecordHeader = 16;
inline constexpr uint16_t kEventTruncated = 1;
inline constexpr size_t kMaxNameLength = 127;
inline constexpr size_t kMaxEventData = 8192;

inline constexpr size_t padded8(size_t bytes)
{
    return (bytes + 7) & ~size_t(7);
}
inline constexpr size_t padded4(size_t bytes)
{
    return (bytes + 3) & ~size_t(3);
}

// The CRC-32 of zlib and gzip. libdeflate computes the same value with
// carry-less multiplication, five times as fast here as zlib: the log
// writer checksums every block of a burst on the tracer's CPU.
inline uint32_t crc32_of(const uint8_t *bytes, size_t length)
{
    return libdeflate_crc32(0, bytes, length);
}

// Little-endian loads and stores at a byte offset; callers check bounds.
// On a little-endian host they are plain copies (one instruction each).
template <typename T> inline T load(const uint8_t *at)
{
    T value = 0;
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&value, at, sizeof value);
    } else {
        for (size_t i = 0; i < sizeof(T); ++i)
            value |= T(T(at[i]) << (8 * i));
    }
    return value;
}

template <typename T> inline void store(uint8_t *at, T value)
{
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(at, &value, sizeof value);
    } else {
        for (size_t i = 0; i < sizeof(T); ++i)
            at[i] = uint8_t(uint64_t(value) >> (8 * i));
    }
}

// Appends fields to a growing byte string.
class ByteSink {
public:
    template <typename T> void put(T value)
    {
        size_t at = bytes_.size();
        bytes_.resize(at + sizeof(T));
        store<T>(bytes_.data() + at, value);
    }
    void put_bytes(const void *data, size_t length)
    {
        const auto *from = static_cast<const uint8_t *>(data);
        bytes_.insert(bytes_.end(), from, from + length);
    }
    void put_fixed_string(std::string_view text, size_t width)
    {
        size_t at = bytes_.size();
        bytes_.resize(at + width, 0);
        std::memcpy(bytes_.data() + at, text.data(), std::min(text.size(), width - 1));
    }
    void pad_to(size_t multiple)
    {
        while (bytes_.size() % multiple)
            bytes_.push_back(0);
    }
    std::vector<uint8_t> &bytes() { return bytes_; }
    size_t size() const { return bytes_.size(); }

private:
    std::vector<uint8_t> bytes_;
};

struct NamedType {
    uint32_t id;
    std::string name;
};

// The name table of the header and the trailer.
inline void put_name_table(ByteSink &sink, const std::vector<NamedType> &types)
{
    sink.put<uint32_t>(uint32_t(types.size()));
    for (const auto &type : types) {
        size_t length = std::min(type.name.size(), kMaxNameLength);
        sink.put<uint32_t>(type.id);
        sink.put<uint32_t>(uint32_t(length));
        sink.put_bytes(type.name.data(), length);
        sink.pad_to(4);
    }
}

// The origin section, after the header's name table: the host name
// (NUL-padded, at least one NUL), the boot id, the stream id, the realtime
// offset (signed).
inline constexpr size_t kOriginHostNameBytes = 72; // 64 and a NUL, padded to 8
inline constexpr size_t kOriginSize = kOriginHostNameBytes + 16 + 16 + 8;
static_assert(kOriginHostNameBytes > TraceOrigin::kHostNameMax);
inline void put_origin(ByteSink &sink, const TraceOrigin &origin)
{
    sink.put_fixed_string(origin.host_name, kOriginHostNameBytes);
    sink.put_bytes(origin.boot_id, sizeof origin.boot_id);
    sink.put_bytes(origin.stream_id, sizeof origin.stream_id);
    sink.put<uint64_t>(uint64_t(origin.realtime_offset_ns));
}

// The origin section at `at` (kOriginSize bytes).
// The host name is what the writer put, up to its first NUL: any bytes.
inline TraceOrigin parse_origin(const uint8_t *at)
{
    TraceOrigin origin;
    const char *name = reinterpret_cast<const char *>(at);
    origin.host_name.assign(name, strnlen(name, TraceOrigin::kHostNameMax));
    std::memcpy(origin.boot_id, at + kOriginHostNameBytes, 16);
    std::memcpy(origin.stream_id, at + kOriginHostNameBytes + 16, 16);
    origin.realtime_offset_ns = int64_t(load<uint64_t>(at + kOriginHostNameBytes + 32));
    return origin;
}

} // namespace posixtrace::log
