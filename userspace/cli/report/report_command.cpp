// posixtrace report: reads a trace log once, through the public API, and
// writes one HTML page that draws it (report_page.cpp). A damaged or cut log
// gives the page of what was read, a note on it, and a failing exit status.
#include "report_command.hpp"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "../target.hpp"
#include "../trace_log.hpp"
#include "report_page.hpp"
#include "timeline.hpp"

namespace posixtrace::cli {
namespace {

struct ReportOptions {
    std::string file;
    std::string output;
};

int run(const ReportOptions &options)
{
    if (options.file.empty())
        fail("report: give the trace log to draw (posixtrace report FILE [-o OUT.html])");
    std::string output = options.output.empty() ? options.file + ".html" : options.output;
    TraceLog log(options.file);
    ReadTally tally;
    Timeline timeline;
    int err = log.read_all(tally, [&](const LoggedEvent &event) { timeline.add(event); });
    timeline.finish();
    ReportSource source{options.file, log.description(), log.status(), ""};
    if (err)
        source.reading_problem = read_error_message(options.file, err, tally.events()) +
                                 ": this page shows the events before.";
    try {
        write_report_page(output, timeline, source);
    } catch (const std::exception &error) {
        fail(error.what());
    }
    if (err)
        fail(read_error_message(options.file, err, tally.events()) + " (" + output +
             " shows the events before)");
    std::fprintf(stderr, "posixtrace: %s: %s; report written to %s\n", options.file.c_str(),
                 tally.summary(log.status()).c_str(), output.c_str());
    return 0;
}

} // namespace

void add_report_command(CLI::App &app)
{
    auto options = std::make_shared<ReportOptions>();
    CLI::App *command = app.add_subcommand(
        "report", "Write one self-contained HTML page of a trace log: a timeline of its threads");
    command->footer("Examples:\n"
                    "  posixtrace report run.ptlog              (writes run.ptlog.html)\n"
                    "  posixtrace report run.ptlog -o run.html");
    command->add_option("file", options->file, "The trace log");
    command->add_option("-o,--output", options->output, "The HTML file (default: FILE.html)");
    command->callback([options] { throw CLI::RuntimeError(run(*options)); });
}

} // namespace posixtrace::cli
