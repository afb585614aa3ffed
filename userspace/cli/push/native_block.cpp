#include "native_block.hpp"

namespace posixtrace::cli {
namespace {

void append_varint(std::string &out, uint64_t value)
{
    while (value >= 0x80) {
        out += char(uint8_t(value) | 0x80);
        value >>= 7;
    }
    out += char(value);
}

void append_length_prefixed(std::string &out, std::string_view value)
{
    append_varint(out, value.size());
    out.append(value);
}

} // namespace

size_t NativeBlock::add_column(std::string name, std::string type)
{
    columns_.push_back({std::move(name), std::move(type), {}});
    return columns_.size() - 1;
}

void NativeBlock::append_string(size_t column, std::string_view value)
{
    append_length_prefixed(columns_[column].data, value);
}

// The text form's first half is the number the server keeps first.
void NativeBlock::append_uuid(size_t column, const uint8_t (&bytes)[16])
{
    std::string &data = columns_[column].data;
    for (int half = 0; half < 2; ++half)
        for (int i = 7; i >= 0; --i)
            data += char(bytes[half * 8 + i]);
}

size_t NativeBlock::value_bytes() const
{
    size_t bytes = 0;
    for (const Column &column : columns_)
        bytes += column.data.size();
    return bytes;
}

void NativeBlock::finish(std::string &out)
{
    out.clear();
    out.reserve(value_bytes() + 64 * columns_.size());
    append_varint(out, columns_.size());
    append_varint(out, rows_);
    for (Column &column : columns_) {
        append_length_prefixed(out, column.name);
        append_length_prefixed(out, column.type);
        out += column.data;
        column.data.clear();
    }
    rows_ = 0;
}

} // namespace posixtrace::cli
