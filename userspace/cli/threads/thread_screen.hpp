#pragma once
// Renders a ThreadTable in at most 80 columns: a header with the process and
// its totals, then one row a thread.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "thread_table.hpp"

namespace posixtrace::cli {

constexpr size_t kScreenColumns = 80;

struct ScreenHeader {
    pid_t pid = 0;
    std::string process_name;
    double elapsed_seconds = 0;
    uint64_t events = 0;
    uint64_t lost = 0;
};

struct ScreenLayout {
    size_t max_lines = 0;        // 0: every row
    uint64_t keep_exited_ns = 0; // 0: exited threads stay listed
};

// Live threads in the order they appeared (not by tid: tids wrap), then the
// threads that exited (newest first, those that exited within keep_exited_ns
// of now_ns); a last line says how many did not fit.
std::vector<std::string> render_threads(const ThreadTable &table, const ScreenHeader &header,
                                        uint64_t now_ns, const ScreenLayout &layout);

// A count in at most `width` characters: 1234567 -> "1234567" or "1.2M".
std::string fit_count(uint64_t value, size_t width);

} // namespace posixtrace::cli
