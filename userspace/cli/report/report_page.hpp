#pragma once
// Writes the report: one self-contained HTML page, its data in a JSON block
// that the inline script draws.
#include <trace.h>

#include <string>

#include "../logged_event.hpp"
#include "timeline.hpp"

namespace posixtrace::cli {

struct ReportSource {
    std::string log_path;
    LogDescription description;
    posix_trace_status_info status{};
    std::string reading_problem; // non-empty: the log is damaged or cut, said on the page
};

// Throws std::runtime_error when the page cannot be written.
void write_report_page(const std::string &path, const Timeline &timeline,
                       const ReportSource &source);

} // namespace posixtrace::cli
