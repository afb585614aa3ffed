// posixtrace export: converts a trace log for other tools, reading it once
// through the public API: Chrome's Trace Event Format (Perfetto UI,
// chrome://tracing), a CTF 1.8 trace (babeltrace2, Trace Compass) or JSON
// Lines (any engine).
#include "export_command.hpp"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "../target.hpp"
#include "../trace_log.hpp"
#include "chrome_writer.hpp"
#include "ctf_writer.hpp"
#include "jsonl_writer.hpp"

namespace posixtrace::cli {
namespace {

struct ExportOptions {
    std::string file;
    std::string format;
    std::string output;
};

// Checked before the log is opened, so a mistyped command fails at once.
void check_options(const ExportOptions &options)
{
    if (options.file.empty())
        fail("export: give the trace log to convert (posixtrace export FILE --format "
             "chrome|ctf|jsonl -o OUT)");
    if (options.format.empty())
        fail("export: give --format chrome, ctf or jsonl");
    if (options.format != "chrome" && options.format != "ctf" && options.format != "jsonl")
        fail("export: unknown format '" + options.format + "' (chrome, ctf or jsonl)");
    if (options.output.empty() && options.format != "jsonl") // jsonl: stdout
        fail(std::string("export: give -o OUT (") +
             (options.format == "ctf" ? "a directory" : "a JSON file") + ")");
}

std::unique_ptr<EventWriter> make_writer(const ExportOptions &options, LogDescription description)
{
    if (options.format == "ctf")
        return std::make_unique<CtfWriter>(options.output, std::move(description));
    if (options.format == "jsonl")
        return std::make_unique<JsonlWriter>(options.output.empty() ? "-" : options.output,
                                             description);
    return std::make_unique<ChromeWriter>(options.output, std::move(description));
}

int run(const ExportOptions &options)
{
    check_options(options);
    TraceLog log(options.file);
    ReadTally tally;
    int err = 0;
    std::string caveat;
    try {
        std::unique_ptr<EventWriter> writer = make_writer(options, log.description());
        err = log.read_all(tally, [&](const LoggedEvent &event) { writer->write(event); });
        writer->finish(); // what was read is a valid trace, even if damage stopped the reading
        caveat = writer->caveat();
    } catch (const std::exception &error) {
        fail(error.what());
    }
    bool to_stdout = options.format == "jsonl" && (options.output.empty() || options.output == "-");
    std::string written_to = to_stdout ? "standard output" : options.output;
    if (err)
        fail(read_error_message(options.file, err, tally.events()) + " (" + written_to +
             " holds the events before)");
    std::string summary = tally.summary(log.status()) + "; written to " + written_to;
    if (!caveat.empty())
        summary += "; " + caveat;
    std::fprintf(stderr, "posixtrace: %s: %s\n", options.file.c_str(), summary.c_str());
    return 0;
}

} // namespace

void add_export_command(CLI::App &app)
{
    auto options = std::make_shared<ExportOptions>();
    CLI::App *command = app.add_subcommand(
        "export", "Convert a trace log for Perfetto / chrome://tracing, babeltrace2 or any "
                  "engine that reads JSON Lines");
    command->footer("Examples:\n"
                    "  posixtrace export run.log --format chrome -o run.json   "
                    "(open in ui.perfetto.dev)\n"
                    "  posixtrace export run.log --format ctf -o run-ctf/ && babeltrace2 run-ctf/\n"
                    "  posixtrace export run.log --format jsonl | jq 'select(.\"event.class\" == "
                    "\"td\")'");
    command->add_option("file", options->file, "The trace log");
    command->add_option("--format", options->format,
                        "chrome (Trace Event JSON), ctf (CTF 1.8) or jsonl (JSON Lines)");
    command->add_option("-o,--output", options->output,
                        "The JSON file (chrome, jsonl) or the trace directory (ctf) to write; "
                        "jsonl without it, or with -, writes to standard output");
    command->callback([options] { throw CLI::RuntimeError(run(*options)); });
}

} // namespace posixtrace::cli
