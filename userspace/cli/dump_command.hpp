#pragma once
#include <CLI/CLI.hpp>

namespace posixtrace::cli {

// `posixtrace dump FILE [--json]`: prints the events of a trace log.
void add_dump_command(CLI::App &app);

} // namespace posixtrace::cli
