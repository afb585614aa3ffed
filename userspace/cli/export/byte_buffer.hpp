#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace posixtrace::cli {

// Bytes being laid out for a binary file: little-endian integers whatever
// the machine (the CTF metadata declares byte_order = le).
class ByteBuffer {
public:
    template <class Integer> void put(Integer value)
    {
        for (size_t i = 0; i < sizeof(Integer); ++i)
            bytes_.push_back(uint8_t(uint64_t(value) >> (8 * i)));
    }
    void put_bytes(const void *data, size_t length)
    {
        const auto *from = static_cast<const uint8_t *>(data);
        bytes_.insert(bytes_.end(), from, from + length);
    }
    void put_zeros(size_t count) { bytes_.resize(bytes_.size() + count, 0); }
    void clear() { bytes_.clear(); }

    const uint8_t *data() const { return bytes_.data(); }
    size_t size() const { return bytes_.size(); }

private:
    std::vector<uint8_t> bytes_;
};

} // namespace posixtrace::cli
