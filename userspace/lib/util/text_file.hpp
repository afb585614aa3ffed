#pragma once
// Text files, mostly of /proc, read through a descriptor opened
// O_RDONLY | O_CLOEXEC. A C++ stream opens without O_CLOEXEC: a program that
// another thread execs meanwhile would inherit the descriptor, and with it a
// traced process's maps (its layout) across a privilege change.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace posixtrace {

// Enough for /proc/PID/comm, /proc/PID/stat and their like.
constexpr size_t kSmallTextFileBytes = 4096;

// The first `limit` bytes of the file at `path` (all of a file that short);
// what follows them is not read. nullopt if it cannot be opened or read.
std::optional<std::string> read_text_file(const std::string &path,
                                          size_t limit = kSmallTextFileBytes);

// The first line of the file at `path`, without its newline, read as
// read_text_file reads; "" if it cannot be read.
std::string read_first_line(const std::string &path);

// A line of /proc/PID/maps is at most PATH_MAX bytes of path and its fields.
constexpr size_t kLongestTextLineBytes = 8192;

// Called with each line; returns false to read no further.
using LineVisitor = std::function<bool(std::string_view line)>;

// Calls `on_line` with each line of the file at `path`, its newline left
// out, in order, however long the file (a hostile process's maps can be
// hundreds of megabytes), until it returns false: the file is read in
// chunks and only the current line is kept. A line longer than
// kLongestTextLineBytes is skipped whole, never passed on cut. False if the
// file cannot be opened, or a read fails (the lines before that were passed
// on).
bool for_each_line(const std::string &path, const LineVisitor &on_line);

} // namespace posixtrace
