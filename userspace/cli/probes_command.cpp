#include "probes_command.hpp"

#include <sys/types.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "safe_text.hpp"
#include "usdt/usdt_notes.hpp"
#include "util/process_files.hpp"

namespace posixtrace::cli {
namespace {

struct ProbesOptions {
    pid_t pid = 0;
    std::string binary;
};

int print_probes(const std::string &object, const std::string &display, bool quiet_if_none)
{
    std::vector<UsdtProbe> probes;
    if (int err = read_usdt_probes(object, probes)) {
        std::fprintf(stderr, "posixtrace: %s: %s\n", terminal_text(display).c_str(),
                     err == ENOEXEC ? "not an ELF file (or a damaged one)" : std::strerror(err));
        return err;
    }
    if (probes.empty()) {
        if (!quiet_if_none)
            std::fprintf(stderr, "posixtrace: %s: no USDT probes\n", terminal_text(display).c_str());
        return 0;
    }
    static bool header_printed = false;
    if (!std::exchange(header_printed, true))
        std::printf("%-40s %14s %14s %4s  %s\n", "PROBE", "ADDRESS", "SEMAPHORE", "ARGS", "OBJECT");
    for (const auto &probe : probes)
        std::printf("%-40s %#14lx %#14lx %4zu  %s\n",
                    terminal_text(probe.provider + ":" + probe.name).c_str(),
                    static_cast<unsigned long>(probe.address),
                    static_cast<unsigned long>(probe.semaphore), probe.parsed.size(),
                    terminal_text(display).c_str());
    return 0;
}

int run(const ProbesOptions &options)
{
    if (options.pid) {
        auto objects = open_mapped_executables(options.pid);
        if (objects.empty()) {
            std::fprintf(stderr, "posixtrace: no process %d (or it maps no files)\n", options.pid);
            return 1;
        }
        for (const auto &object : objects) // the very files mapped, named as the process does
            print_probes(object.path(), object.name, true);
        return 0;
    }
    return print_probes(options.binary, options.binary, false) ? 1 : 0;
}

} // namespace

void add_probes_command(CLI::App &app)
{
    auto options = std::make_shared<ProbesOptions>();
    CLI::App *command = app.add_subcommand("probes", "List the USDT probes of a binary or a process");
    command->footer("Examples:\n  posixtrace probes /usr/bin/python3.11\n  posixtrace probes -p 1234");
    auto *pid = command->add_option("-p,--pid", options->pid, "Process whose mapped objects to list")
                    ->check(CLI::PositiveNumber);
    auto *binary = command->add_option("binary", options->binary, "ELF executable or library");
    pid->excludes(binary);
    binary->excludes(pid);
    command->callback([options, command] {
        if (!options->pid && options->binary.empty())
            throw CLI::ValidationError("probes", "give a BINARY or -p PID");
        throw CLI::RuntimeError(run(*options));
    });
}

} // namespace posixtrace::cli
