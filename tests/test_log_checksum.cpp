// The log's CRC-32 is zlib's (docs/log-format.md): the value the format
// documents, and zlib's own over blocks of every size the writer makes, so
// logs written before the checksum moved to libdeflate read as before.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdint>
#include <random>
#include <vector>

#include "log/log_format.hpp"

namespace format = posixtrace::log;

TEST_CASE("log checksum: the CRC-32 the format documents")
{
    const char *check = "123456789";
    CHECK(format::crc32_of(reinterpret_cast<const uint8_t *>(check), 9) == 0xCBF43926u);
    CHECK(format::crc32_of(nullptr, 0) == 0);
}

TEST_CASE("log checksum: zlib's value, whatever the length and alignment")
{
    std::mt19937 random(25);
    std::vector<uint8_t> bytes(format::kMaxBlockPayload + 64);
    for (uint8_t &byte : bytes)
        byte = uint8_t(random());
    for (size_t length : {size_t(1), size_t(7), size_t(8), size_t(63), size_t(4096),
                          size_t(256 * 1024), size_t(format::kMaxBlockPayload)}) {
        for (size_t offset : {size_t(0), size_t(3)}) {
            const uint8_t *at = bytes.data() + offset;
            uLong zlib = crc32(crc32(0L, Z_NULL, 0), at, uInt(length));
            CHECK(format::crc32_of(at, length) == uint32_t(zlib));
        }
    }
}
