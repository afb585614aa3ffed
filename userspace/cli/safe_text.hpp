#pragma once
// Text that a traced process controls (event names, thread names, decoded
// strings, probe names of its ELF files, a log's trace name) made harmless
// for the places the CLI writes it: a terminal and JSON. docs/security.md.
#include <cstddef>
#include <string>
#include <string_view>

namespace posixtrace::cli {

// The length of the valid UTF-8 sequence at `text[at]` (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF); 0 if it is not one.
size_t utf8_sequence_length(std::string_view text, size_t at);

// `text` as a JSON string literal, quotes included. Control characters (C0,
// DEL, C1) and the characters that reorder or split text on screen (bidi
// controls, line and paragraph separators) are escaped as \uXXXX, so the
// JSON says the same and shows harmlessly on a terminal; bytes that are not
// UTF-8 are escaped as the Latin-1 characters they would be, so the result
// is always valid JSON.
std::string json_string(std::string_view text);

// The text json_string(text) stands for, as UTF-8: the valid sequences of
// `text` as they are, each byte that is not UTF-8 as the Latin-1 character
// it would be. What an engine fed JSON stores; for other formats to store
// the same.
std::string valid_utf8(std::string_view text);

// `text` with C escapes for what would act on a display: printable
// characters as they are; a backslash, `quote` (unless 0), and every byte of
// a control character, a reordering character or a sequence that is not
// UTF-8, as \\, \", \n, \t, \r or \ooo (three octal digits). The escapes
// read back to the bytes, whatever follows them.
std::string c_escaped(std::string_view text, char quote = 0);

// `text` for a terminal (c_escaped): no escape sequence reaches the terminal
// and one event stays one line.
inline std::string terminal_text(std::string_view text)
{
    return c_escaped(text);
}

// terminal_text(text) in a column `width` characters wide: cut between
// characters and escapes, never inside one (a cut escape would read back
// as other bytes, a cut UTF-8 sequence as an invalid one), then padded
// with spaces. A UTF-8 character counts as one column.
std::string terminal_column(std::string_view text, size_t width);

} // namespace posixtrace::cli
