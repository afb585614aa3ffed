#pragma once
#include <CLI/CLI.hpp>

namespace posixtrace::cli {

// `posixtrace report FILE [-o OUT.html]`: one self-contained HTML page of a
// trace log, a timeline with a lane per thread.
void add_report_command(CLI::App &app);

} // namespace posixtrace::cli
