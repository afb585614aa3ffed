#pragma once
#include <CLI/CLI.hpp>

namespace posixtrace::cli {

// `posixtrace export FILE --format chrome|ctf -o OUT`: converts a trace log.
void add_export_command(CLI::App &app);

} // namespace posixtrace::cli
