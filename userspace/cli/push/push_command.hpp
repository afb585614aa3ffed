#pragma once
#include <CLI/CLI.hpp>

namespace posixtrace::cli {

void add_push_command(CLI::App &app);

} // namespace posixtrace::cli
