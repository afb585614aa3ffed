// push's blocks of ClickHouse's Native format, byte by byte: the layout the
// server reads (the UUID's as Debian's 18.16 writes it for the same value).
#include <catch2/catch.hpp>

#include <string>

#include "../userspace/cli/push/native_block.hpp"

using posixtrace::cli::NativeBlock;

namespace {

std::string bytes(std::initializer_list<int> values)
{
    std::string out;
    for (int value : values)
        out += char(value);
    return out;
}

std::string text(const std::string &value)
{
    return char(value.size()) + value;
}

} // namespace

TEST_CASE("native block: each column's values side by side after its name and type",
          "[push][native]")
{
    NativeBlock block;
    size_t name = block.add_column("host.name", "String");
    size_t id = block.add_column("stream.id", "UUID");
    size_t sequence = block.add_column("sequence", "UInt64");
    size_t pid = block.add_column("process.pid", "Int32");
    // ca144f19-748d-41fe-ae99-63e6a180e763
    const uint8_t uuid[16] = {0xca, 0x14, 0x4f, 0x19, 0x74, 0x8d, 0x41, 0xfe,
                              0xae, 0x99, 0x63, 0xe6, 0xa1, 0x80, 0xe7, 0x63};
    block.append_string(name, "vm");
    block.append_uuid(id, uuid);
    block.append_number(sequence, uint64_t(0x0102030405060708));
    block.append_number(pid, int32_t(-2));
    block.end_row();
    block.append_string(name, std::string(200, 'x')); // a length of two bytes
    block.append_uuid(id, uuid);
    block.append_number(sequence, uint64_t(1));
    block.append_number(pid, int32_t(7));
    block.end_row();
    CHECK(block.rows() == 2);
    CHECK(block.value_bytes() == 3 + 202 + 32 + 16 + 8);

    std::string out = "left from before";
    block.finish(out);
    std::string uuid_bytes = bytes({0xfe, 0x41, 0x8d, 0x74, 0x19, 0x4f, 0x14, 0xca, 0x63, 0xe7,
                                    0x80, 0xa1, 0xe6, 0x63, 0x99, 0xae});
    std::string expected = bytes({4, 2});
    expected += text("host.name") + text("String") + text("vm") + bytes({0xc8, 0x01}) +
                std::string(200, 'x');
    expected += text("stream.id") + text("UUID") + uuid_bytes + uuid_bytes;
    expected += text("sequence") + text("UInt64") + bytes({8, 7, 6, 5, 4, 3, 2, 1}) +
                bytes({1, 0, 0, 0, 0, 0, 0, 0});
    expected +=
        text("process.pid") + text("Int32") + bytes({0xfe, 0xff, 0xff, 0xff}) + bytes({7, 0, 0, 0});
    CHECK(out == expected);

    SECTION("finished, the block is empty and takes the next rows under the same columns")
    {
        CHECK(block.rows() == 0);
        CHECK(block.value_bytes() == 0);
        block.append_string(name, "");
        block.append_uuid(id, uuid);
        block.append_number(sequence, uint64_t(2));
        block.append_number(pid, int32_t(0));
        block.end_row();
        block.finish(out);
        CHECK(out.substr(0, 2) == bytes({4, 1}));
        CHECK(out.size() == 2 + (10 + 7) + (10 + 5) + (9 + 7) + (12 + 6) + 1 + 16 + 8 + 4);
    }
}
