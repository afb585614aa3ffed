#include "thread_screen.hpp"

#include <algorithm>
#include <cstdio>

#include "../safe_text.hpp"

namespace posixtrace::cli {
namespace {

constexpr size_t kHeaderLines = 5; // title, two lines of totals, blank, column names

std::string printf_string(const char *format, auto... values)
{
    char line[256];
    std::snprintf(line, sizeof line, format, values...);
    return line;
}

std::string mark_of(const ThreadRow &thread)
{
    if (!thread.exited)
        return thread.created ? "new" : "";
    int status = thread.exit_status;
    if (status & 0x7f)
        return "sig " + std::to_string(status & 0x7f);
    int code = (status >> 8) & 0xff;
    return code ? "exit " + std::to_string(code) : "exit";
}

std::string row_line(const ThreadRow &thread, uint64_t now_ns)
{
    std::string cpu = thread.cpu < 0 ? "-" : fit_count(uint64_t(thread.cpu), 3);
    double run_seconds = double(thread.run_time(now_ns)) / 1e9;
    std::string run = run_seconds < 1e5 ? printf_string("%.3f", run_seconds)
                                        : fit_count(uint64_t(run_seconds), 9);
    return printf_string("%7d %s %c %3s %9s %8s %8s %6s %6s %-6.6s", thread.tid,
                         terminal_column(thread.name, 15).c_str(), thread.state, cpu.c_str(),
                         run.c_str(), fit_count(thread.voluntary, 8).c_str(),
                         fit_count(thread.involuntary, 8).c_str(),
                         fit_count(thread.signals, 6).c_str(),
                         fit_count(thread.lock_waits, 6).c_str(), mark_of(thread).c_str());
}

std::vector<const ThreadRow *> rows_in_order(const ThreadTable &table, uint64_t now_ns,
                                             uint64_t keep_exited_ns, size_t &hidden_exited)
{
    std::vector<const ThreadRow *> live, exited;
    for (const auto &thread : table.rows()) // in order of appearance, not of tid: tids wrap
        (thread.exited ? exited : live).push_back(&thread);
    std::sort(exited.begin(), exited.end(), [](const ThreadRow *a, const ThreadRow *b) {
        return a->exited_at_ns > b->exited_at_ns;
    });
    size_t kept = exited.size();
    if (keep_exited_ns)
        kept = size_t(std::count_if(exited.begin(), exited.end(), [&](const ThreadRow *thread) {
            return now_ns <= thread->exited_at_ns + keep_exited_ns;
        }));
    hidden_exited = exited.size() - kept;
    live.insert(live.end(), exited.begin(), exited.begin() + long(kept));
    return live;
}

} // namespace

std::string fit_count(uint64_t value, size_t width)
{
    std::string plain = std::to_string(value);
    if (plain.size() <= width)
        return plain;
    static const char units[] = "kMGTPE";
    double scaled = double(value);
    for (char unit : units) {
        scaled /= 1000;
        std::string text = printf_string("%.1f%c", scaled, unit);
        if (text.size() > width)
            text = printf_string("%.0f%c", scaled, unit);
        if (text.size() <= width)
            return text;
    }
    return std::string(width, '#');
}

std::vector<std::string> render_threads(const ThreadTable &table, const ScreenHeader &header,
                                        uint64_t now_ns, const ScreenLayout &layout)
{
    const ThreadTotals &totals = table.totals();
    uint64_t live = totals.live_from_kernel ? totals.live : table.live_rows();
    std::vector<std::string> lines;
    std::string title = printf_string("posixtrace threads: pid %d (%.20s)", header.pid,
                                      terminal_text(header.process_name).c_str());
    std::string clock = printf_string("%.1f s", header.elapsed_seconds);
    title += std::string(title.size() + clock.size() < kScreenColumns
                             ? kScreenColumns - 1 - title.size() - clock.size()
                             : 1,
                         ' ');
    lines.push_back(title + clock);
    lines.push_back(printf_string("threads: live %s  created %s  exited %s  reaped %s",
                                  fit_count(live, 6).c_str(), fit_count(totals.created, 6).c_str(),
                                  fit_count(totals.exited, 6).c_str(),
                                  fit_count(totals.reaped, 6).c_str()));
    lines.push_back(
        printf_string("switches %s  signals %s  locks %s  events %s  lost %s",
                      fit_count(totals.switches, 7).c_str(), fit_count(totals.signals, 6).c_str(),
                      fit_count(totals.lock_waits, 6).c_str(), fit_count(header.events, 7).c_str(),
                      fit_count(header.lost, 6).c_str()));
    lines.emplace_back();
    lines.push_back(printf_string("%7s %-15s %s %3s %9s %8s %8s %6s %6s %s", "TID", "NAME", "S",
                                  "CPU", "RUN s", "VOL", "INVOL", "SIG", "LOCK", "MARK"));

    size_t hidden = 0;
    auto rows = rows_in_order(table, now_ns, layout.keep_exited_ns, hidden);
    size_t room = rows.size();
    if (layout.max_lines)
        room = layout.max_lines > kHeaderLines + 1 ? layout.max_lines - kHeaderLines : 1;
    bool cut = rows.size() > room;
    size_t shown = cut ? room - 1 : rows.size();
    for (size_t i = 0; i < shown; ++i)
        lines.push_back(row_line(*rows[i], now_ns));
    if (cut || hidden) {
        size_t not_shown = rows.size() - shown + hidden;
        size_t live_not_shown = 0;
        for (size_t i = shown; i < rows.size(); ++i)
            live_not_shown += !rows[i]->exited;
        lines.push_back(printf_string("  ... %zu more threads (%zu live, %zu exited)", not_shown,
                                      live_not_shown, not_shown - live_not_shown));
    }
    for (auto &line : lines) {
        if (line.size() > kScreenColumns - 1)
            line.resize(kScreenColumns - 1);
        line.erase(line.find_last_not_of(' ') + 1);
    }
    return lines;
}

} // namespace posixtrace::cli
