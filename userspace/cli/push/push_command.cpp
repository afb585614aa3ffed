// posixtrace push: ships trace logs into a ClickHouse server (LogPusher),
// each read once through the public API.
#include "push_command.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../target.hpp"
#include "../trace_log.hpp"
#include "log_pusher.hpp"

namespace posixtrace::cli {
namespace {

struct PushCommandOptions {
    std::string clickhouse;
    std::vector<std::string> files;
    PushOptions push;
};

std::string outcome_text(const PushOutcome &outcome, double seconds)
{
    char rate[64] = "";
    if (outcome.sent && seconds > 0)
        std::snprintf(rate, sizeof rate, " (%.0f events/s)", double(outcome.sent) / seconds);
    return std::to_string(outcome.events) + " events, " + std::to_string(outcome.sent) + " sent" +
           rate + ", " + std::to_string(outcome.already_stored) + " already there";
}

std::string failure_text(const PushFailure &failure, const std::string &file)
{
    std::string text = "push: " + std::string(failure.what()) + "; " + file +
                       ": the server holds " +
                       (failure.stored ? std::to_string(*failure.stored) : "an unknown number") +
                       " of its events, the log is unchanged";
    return failure.retryable ? text + ": push it again to send the rest" : text;
}

// One line on standard error either way; false if the log was not pushed whole.
bool push_one(LogPusher &pusher, const std::string &file, const std::string &url)
{
    TraceLog log(file);
    ReadTally tally;
    int read_error = 0;
    auto begin = std::chrono::steady_clock::now();
    std::string line;
    try {
        PushOutcome outcome = pusher.push(log, tally, read_error);
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        line = read_error
                   ? "push: " + read_error_message(file, read_error, tally.events()) + " (the " +
                         std::to_string(outcome.events) + " events before it are in " + url + ")"
                   : file + ": " + outcome_text(outcome, seconds) + " to " + url;
    } catch (const PushFailure &failure) {
        line = failure_text(failure, file);
        read_error = -1;
    } catch (const std::exception &error) {
        line = "push: " + std::string(error.what());
        read_error = -1;
    }
    std::fprintf(stderr, "posixtrace: %s\n", line.c_str());
    return read_error == 0;
}

int run(const PushCommandOptions &options)
{
    if (options.clickhouse.empty())
        fail("push: give --clickhouse URL (e.g. http://127.0.0.1:8123)");
    if (options.files.empty())
        fail("push: give the trace logs to push (posixtrace push --clickhouse URL FILE...)");
    std::unique_ptr<ClickHouseHttp> server;
    try {
        server = std::make_unique<ClickHouseHttp>(options.clickhouse);
    } catch (const std::exception &error) {
        fail("push: --clickhouse: " + std::string(error.what()));
    }
    for (const std::string &file : options.files) // every log readable before anything is sent
        TraceLog check(file);
    LogPusher pusher(*server, options.push);
    try {
        pusher.create_tables();
    } catch (const PushFailure &failure) {
        fail("push: " + std::string(failure.what()) + "; nothing was sent");
    }
    bool all_pushed = true; // a log that fails does not keep the next from going
    for (const std::string &file : options.files)
        all_pushed = push_one(pusher, file, server->url()) && all_pushed;
    return all_pushed ? 0 : 1;
}

} // namespace

void add_push_command(CLI::App &app)
{
    auto options = std::make_shared<PushCommandOptions>();
    CLI::App *command = app.add_subcommand(
        "push", "Ship trace logs into ClickHouse (tables of share/posixtrace/clickhouse.sql)");
    command->footer("Examples:\n"
                    "  posixtrace push --clickhouse http://127.0.0.1:8123 run.ptlog\n"
                    "  POSIXTRACE_CLICKHOUSE_PASSWORD=... posixtrace push --clickhouse "
                    "https://user@ch.example:8443 host-*.ptlog");
    command->add_option("files", options->files, "The trace logs");
    command->add_option("--clickhouse", options->clickhouse,
                        "The server's HTTP interface: http(s)://[user@]host:port (the password "
                        "in POSIXTRACE_CLICKHOUSE_PASSWORD)");
    command->add_option("--retries", options->push.retries,
                        "How many times a batch the server could not take is sent again "
                        "(waiting 0.25 s, then twice as long each time; default 5)");
    command
        ->add_option("--batch-size", options->push.batch_bytes,
                     "About how many bytes of rows a batch holds (at most two are in memory; "
                     "default 64MiB: the server writes fewer, larger parts)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Range(size_t(64) << 10, size_t(1) << 30));
    command->add_flag("--incomplete", options->push.incomplete,
                      "Push logs that do not end with their stream's shutdown (cut short); "
                      "only once their writer is gone");
    command->callback([options] { throw CLI::RuntimeError(run(*options)); });
}

} // namespace posixtrace::cli
