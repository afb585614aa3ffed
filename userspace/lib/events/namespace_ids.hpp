#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "posixtrace.h"

namespace posixtrace {

// A record of a thread in a PID namespace other than the first one keeps
// the ids that namespace gives it after its data (PT_RECORD_NAMESPACE_IDS):
// the kernel's rings and the store lay it out so. Only the kernel writes
// one: a lane's record that claims them is damaged.
inline size_t namespace_ids_offset(uint32_t data_len)
{
    return (size_t(data_len) + 7) & ~size_t(7);
}

// The bytes after a record's header that are its own.
inline size_t record_payload_bytes(uint32_t data_len, bool has_namespace_ids)
{
    return has_namespace_ids ? namespace_ids_offset(data_len) + sizeof(pt_namespace_ids) : data_len;
}

inline size_t record_payload_bytes(const pt_record &header)
{
    return record_payload_bytes(header.data_len, header.flags & PT_RECORD_NAMESPACE_IDS);
}

// The ids of a record whose header and payload are known to hold them (a
// record of the kernel's rings, checked, or of the store).
inline std::optional<pt_namespace_ids> namespace_ids_of(const pt_record &header, const void *data)
{
    if (!(header.flags & PT_RECORD_NAMESPACE_IDS))
        return std::nullopt;
    pt_namespace_ids ids;
    std::memcpy(&ids, static_cast<const uint8_t *>(data) + namespace_ids_offset(header.data_len),
                sizeof ids);
    return ids;
}

} // namespace posixtrace
