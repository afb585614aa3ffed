#pragma once
// A block of ClickHouse's Native format, built a row at a time: each
// column's values side by side, the way the server keeps them, so it takes
// the block without parsing text (numbers little-endian, a string as its
// length in LEB128 then its bytes, a UUID as its two halves, each a
// little-endian 64-bit number).
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace posixtrace::cli {

class NativeBlock {
public:
    // Declares the next column; returns its index for the append calls.
    size_t add_column(std::string name, std::string type);

    void append_string(size_t column, std::string_view value);
    void append_uuid(size_t column, const uint8_t (&bytes)[16]);
    template <class Number> void append_number(size_t column, Number value)
    {
        static_assert(std::is_integral_v<Number>);
        std::string &data = columns_[column].data;
        size_t at = data.size();
        data.resize(at + sizeof value);
        std::memcpy(data.data() + at, &value, sizeof value); // x86-64: little-endian
    }
    // Ends a row: every column has had one value since the last.
    void end_row() { ++rows_; }

    size_t rows() const { return rows_; }
    // The bytes of the columns' values so far.
    size_t value_bytes() const;
    // The block, header and columns, into `out` (cleared first); the
    // columns are emptied for the next block, their memory kept.
    void finish(std::string &out);

private:
    struct Column {
        std::string name, type, data;
    };
    std::vector<Column> columns_;
    size_t rows_ = 0;
};

} // namespace posixtrace::cli
