// posixtrace: the command-line tool. See README.md.
#include <CLI/CLI.hpp>

#include <sys/resource.h>

#include <cstdio>

#include "dump_command.hpp"
#include "export/export_command.hpp"
#include "probes_command.hpp"
#include "push/push_command.hpp"
#include "record_command.hpp"
#include "report/report_command.hpp"
#include "threads/threads_command.hpp"

namespace {

// Each USDT probe site attached is a descriptor (a uprobe perf event): a
// process that loads a thousand libraries with probes would exhaust the
// usual soft limit of 1024. The hard limit is what the operator allows.
void allow_all_descriptors()
{
    rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
}

} // namespace

int main(int argc, char **argv)
{
    allow_all_descriptors();
    CLI::App app{"posixtrace: POSIX tracing for Linux on BPF"};
    app.set_version_flag("--version", std::string("posixtrace ") + POSIXTRACE_VERSION);
    app.require_subcommand(1);
    posixtrace::cli::add_dump_command(app);
    posixtrace::cli::add_export_command(app);
    posixtrace::cli::add_probes_command(app);
    posixtrace::cli::add_push_command(app);
    posixtrace::cli::add_record_command(app);
    posixtrace::cli::add_report_command(app);
    posixtrace::cli::add_threads_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::RuntimeError &result) {
        return result.get_exit_code();
    } catch (const CLI::ParseError &error) {
        return app.exit(error);
    }
    return 0;
}
