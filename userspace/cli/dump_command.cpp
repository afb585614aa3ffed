// posixtrace dump: prints every event of a trace log, one a line, as
// `record` prints them live. Built on the public API only (posix_trace_open
// and the getnext calls).
#include "dump_command.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "event_format.hpp"
#include "target.hpp"
#include "trace_log.hpp"

namespace posixtrace::cli {
namespace {

struct DumpOptions {
    std::string file;
    bool json = false;
};

void print_event(const LoggedEvent &event, bool json)
{
    std::string line = json ? format_json(event.info, event.name, event.data, event.length)
                            : format_text(event.info, event.name, event.data, event.length);
    add_namespace_ids(line, event.namespace_ids, json);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
}

int run(const DumpOptions &options)
{
    if (options.file.empty())
        fail("dump: give the trace log to read (posixtrace dump FILE)");
    TraceLog log(options.file);
    static char output_buffer[1 << 20];
    std::setvbuf(stdout, output_buffer, _IOFBF, sizeof output_buffer);

    ReadTally tally;
    int err =
        log.read_all(tally, [&](const LoggedEvent &event) { print_event(event, options.json); });
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        fail(std::string("standard output: ") + std::strerror(errno));
    if (err)
        fail(read_error_message(options.file, err, tally.events()));
    std::fprintf(stderr, "posixtrace: %s: %s\n", options.file.c_str(),
                 tally.summary(log.status()).c_str());
    return 0;
}

} // namespace

void add_dump_command(CLI::App &app)
{
    auto options = std::make_shared<DumpOptions>();
    CLI::App *command =
        app.add_subcommand("dump", "Print the events of a trace log (written by record -o)");
    command->footer("Examples:\n"
                    "  posixtrace dump trace.ptlog\n"
                    "  posixtrace dump trace.ptlog --json | jq .event");
    command->add_option("file", options->file, "The trace log");
    command->add_flag("--json", options->json, "One JSON object per event");
    command->callback([options] { throw CLI::RuntimeError(run(*options)); });
}

} // namespace posixtrace::cli
