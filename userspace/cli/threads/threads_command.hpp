#pragma once
#include <CLI/CLI.hpp>

namespace posixtrace::cli {

// `posixtrace threads (-p PID | -- CMD ARGS...) [--interval SEC] [--duration SEC]`
void add_threads_command(CLI::App &app);

} // namespace posixtrace::cli
