#include "safe_text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace posixtrace::cli {
namespace {

unsigned char byte_at(std::string_view text, size_t i)
{
    return i < text.size() ? static_cast<unsigned char>(text[i]) : 0;
}

// The code point of the valid sequence of `length` bytes at `text[at]`.
uint32_t code_point(std::string_view text, size_t at, size_t length)
{
    static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t value = byte_at(text, at) & lead_mask[length];
    for (size_t i = 1; i < length; ++i)
        value = value << 6 | (byte_at(text, at + i) & 0x3f);
    return value;
}

// Characters that act on the display instead of showing: C0 and DEL, C1
// (some terminals take U+009B as CSI), the bidi controls that reorder what
// follows (U+200E/F, U+202A-202E, U+2066-2069: "Trojan Source"), and the
// line and paragraph separators (U+2028, U+2029).
bool acts_on_display(uint32_t c)
{
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x200e || c == 0x200f ||
           (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

// Always three octal digits: a C or TSDL reader takes at most three, so a
// digit that follows stays itself. (A reader takes every hex digit after
// \x: "\x1b" then "a" would read back as one byte, 0x1ba.)
void append_octal_byte(std::string &out, unsigned char byte)
{
    out += '\\';
    out += char('0' + (byte >> 6));
    out += char('0' + ((byte >> 3) & 7));
    out += char('0' + (byte & 7));
}

} // namespace

size_t utf8_sequence_length(std::string_view text, size_t at)
{
    unsigned char lead = byte_at(text, at);
    size_t length;
    unsigned char low = 0x80, high = 0xbf; // the range of the second byte
    if (lead >= 0xc2 && lead <= 0xdf)
        length = 2;
    else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        low = lead == 0xe0 ? 0xa0 : 0x80;
        high = lead == 0xed ? 0x9f : 0xbf;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        low = lead == 0xf0 ? 0x90 : 0x80;
        high = lead == 0xf4 ? 0x8f : 0xbf;
    } else
        return 0;
    if (at + length > text.size() || byte_at(text, at + 1) < low || byte_at(text, at + 1) > high)
        return 0;
    for (size_t i = 2; i < length; ++i)
        if ((byte_at(text, at + i) & 0xc0) != 0x80)
            return 0;
    return length;
}

std::string json_string(std::string_view text)
{
    std::string quoted = "\"";
    quoted.reserve(text.size() + 2);
    for (size_t i = 0; i < text.size(); ++i) {
        unsigned char c = byte_at(text, i);
        size_t length = c < 0x80 ? 1 : utf8_sequence_length(text, i);
        // Not UTF-8: escaped as the Latin-1 character the byte would be.
        uint32_t point = length ? code_point(text, i, length) : c;
        if (c == '"' || c == '\\') {
            quoted += '\\';
            quoted += char(c);
        } else if (length && !acts_on_display(point)) {
            quoted.append(text.substr(i, length));
        } else {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\u%04x", unsigned(point));
            quoted += escape;
        }
        if (length > 1)
            i += length - 1;
    }
    return quoted + "\"";
}

std::string valid_utf8(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        unsigned char c = byte_at(text, i);
        size_t length = c < 0x80 ? 1 : utf8_sequence_length(text, i);
        if (length) {
            out.append(text.substr(i, length));
            i += length - 1;
        } else { // U+0080 .. U+00FF: two bytes
            out += char(0xc0 | (c >> 6));
            out += char(0x80 | (c & 0x3f));
        }
    }
    return out;
}

std::string c_escaped(std::string_view text, char quote)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        unsigned char c = byte_at(text, i);
        size_t length = c < 0x80 ? 1 : utf8_sequence_length(text, i);
        if (length && !acts_on_display(length == 1 ? c : code_point(text, i, length))) {
            if (c == '\\' || (quote && c == static_cast<unsigned char>(quote)))
                out += '\\';
            out.append(text.substr(i, length));
            i += length - 1;
            continue;
        }
        switch (c) {
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\r':
            out += "\\r";
            break;
        default:
            // Every byte of a reordering character, so it reads back.
            for (size_t k = 0; k < (length ? length : 1); ++k)
                append_octal_byte(out, byte_at(text, i + k));
            if (length > 1)
                i += length - 1;
        }
    }
    return out;
}

std::string terminal_column(std::string_view text, size_t width)
{
    std::string out;
    size_t columns = 0;
    for (size_t i = 0; i < text.size();) {
        size_t length = std::max<size_t>(1, utf8_sequence_length(text, i));
        std::string piece = c_escaped(text.substr(i, length));
        size_t piece_columns = length == 1 || piece[0] == '\\' ? piece.size() : 1;
        if (columns + piece_columns > width)
            break;
        out += piece;
        columns += piece_columns;
        i += length;
    }
    out.append(width - columns, ' ');
    return out;
}

} // namespace posixtrace::cli
