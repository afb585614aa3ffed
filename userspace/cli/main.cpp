// posixtrace: the command-line tool. See README.md.
#include <CLI/CLI.hpp>
#include <trace.h>

#include <cstdio>

int main(int argc, char **argv)
{
    CLI::App app{"posixtrace: POSIX tracing for Linux on BPF"};
    app.set_version_flag("--version", std::string("posixtrace ") + POSIXTRACE_VERSION);
    app.require_subcommand(0, 1);
    CLI11_PARSE(app, argc, argv);
    if (app.get_subcommands().empty()) {
        std::fputs(app.help().c_str(), stdout);
        return 0;
    }
    return 0;
}
