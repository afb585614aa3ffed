#pragma once
#include <CLI/CLI.hpp>

namespace posixtrace::cli {

// `posixtrace record [-p PID | -- CMD ARGS...] [--events LIST] [--duration SEC] [--json]`
void add_record_command(CLI::App &app);

} // namespace posixtrace::cli
