#include "attributes/trace_origin.hpp"

#include <sys/random.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstring>

#include "util/text_file.hpp"

namespace posixtrace {
namespace {

int hex_value(char digit)
{
    if (digit >= '0' && digit <= '9')
        return digit - '0';
    if (digit >= 'a' && digit <= 'f')
        return digit - 'a' + 10;
    if (digit >= 'A' && digit <= 'F')
        return digit - 'A' + 10;
    return -1;
}

bool random_bytes(uint8_t (&bytes)[16])
{
    ssize_t got;
    do
        got = getrandom(bytes, sizeof bytes, 0);
    while (got < 0 && errno == EINTR);
    return got == ssize_t(sizeof bytes);
}

} // namespace

std::string uuid_text(const uint8_t (&bytes)[16])
{
    static const char digits[] = "0123456789abcdef";
    std::string text;
    for (size_t i = 0; i < sizeof bytes; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text += '-';
        text += digits[bytes[i] >> 4];
        text += digits[bytes[i] & 15];
    }
    return text;
}

bool parse_uuid(const std::string &text, uint8_t (&into)[16])
{
    uint8_t bytes[16];
    if (text.size() != 36)
        return false;
    size_t at = 0;
    for (size_t i = 0; i < sizeof bytes; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            if (text[at++] != '-')
                return false;
        }
        int high = hex_value(text[at]), low = hex_value(text[at + 1]);
        if (high < 0 || low < 0)
            return false;
        bytes[i] = uint8_t(high << 4 | low);
        at += 2;
    }
    std::memcpy(into, bytes, sizeof bytes); // only whole: a failed parse leaves `into` as it was
    return true;
}

std::optional<TraceOrigin> TraceOrigin::of_new_stream(int64_t realtime_offset_ns)
{
    TraceOrigin origin;
    if (!random_bytes(origin.stream_id))
        return std::nullopt;
    // A UUID of version 4 (random), as engines that parse them expect.
    origin.stream_id[6] = uint8_t((origin.stream_id[6] & 0x0f) | 0x40);
    origin.stream_id[8] = uint8_t((origin.stream_id[8] & 0x3f) | 0x80);
    utsname host;
    if (uname(&host) == 0)
        origin.host_name.assign(host.nodename, strnlen(host.nodename, kHostNameMax));
    // Without a boot id (no procfs) the stream id alone still tells streams apart.
    if (std::optional<std::string> boot = read_text_file("/proc/sys/kernel/random/boot_id"))
        parse_uuid(boot->substr(0, 36), origin.boot_id);
    origin.realtime_offset_ns = realtime_offset_ns;
    return origin;
}

} // namespace posixtrace
