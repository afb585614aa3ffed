#pragma once
#include <CLI/CLI.hpp>

namespace posixtrace::cli {

// `posixtrace probes (-p PID | BINARY)`: lists USDT probes.
void add_probes_command(CLI::App &app);

} // namespace posixtrace::cli
