// posixtrace record: traces a running process or a command it starts, and
// prints its events live. Built on the public API only.
#include "record_command.hpp"
#include "loss_summary.hpp"

#include <fcntl.h>
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <signal.h>
#include <sys/stat.h>
#include <trace.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "event_format.hpp"
#include "event_names_cache.hpp"
#include "push/record_push.hpp"
#include "target.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace::cli {
namespace {

struct RecordOptions {
    pid_t pid = 0;
    std::vector<std::string> command;
    std::string output;
    std::string push; // a ClickHouse server's URL
    std::string events = "user,usdt,td:create,td:death,system";
    bool inherit = false;
    double duration = 0;
    bool json = false;
    std::vector<std::string> usdt_strings; // PROVIDER:NAME:INDEX
};

// What --events asks for.
struct EventSelection {
    bool user = false;
    bool system = false;
    std::vector<std::string> usdt; // "*" or "PROVIDER:NAME"
    std::set<trace_event_id_t> thread_events;
};

constexpr size_t kRecordStreamBytes = 64u << 20;

// td:NAME -> the id of td_NAME; td -> all of them.
void add_thread_events(const std::string &item, EventSelection &selection)
{
    static const char *const names[POSIX_TRACE_TD_EVENT_COUNT] = {
        "ready",  "sleep", "switchto", "switchfrom",  "lock_try", "catchsig",    "idle",
        "create", "death", "preempt",  "pri_inherit", "reap",     "concurrency", "timeout"};
    bool known = false;
    for (unsigned i = 0; i < POSIX_TRACE_TD_EVENT_COUNT; ++i)
        if (item == "td" || item == std::string("td:") + names[i]) {
            selection.thread_events.insert(POSIX_TRACE_TD_EVENT_FIRST + i);
            known = true;
        }
    if (!known)
        fail("unknown thread event '" + item +
             "' in --events (td, or td:NAME with NAME one of ready, "
             "sleep, switchto, switchfrom, lock_try, catchsig, idle, create, death, preempt, "
             "pri_inherit, reap, concurrency, timeout)");
}

EventSelection parse_events(const std::string &list)
{
    EventSelection selection;
    std::stringstream items(list);
    std::string item;
    while (std::getline(items, item, ',')) {
        if (item == "user")
            selection.user = true;
        else if (item == "system")
            selection.system = true;
        else if (item == "usdt")
            selection.usdt.push_back("*");
        else if (item.rfind("usdt:", 0) == 0 && item.find(':', 5) != std::string::npos)
            selection.usdt.push_back(item.substr(5));
        else if (item == "td" || item.rfind("td:", 0) == 0)
            add_thread_events(item, selection);
        else
            fail("unknown event class '" + item +
                 "' in --events (user, usdt, usdt:PROVIDER:NAME, td, td:NAME, system)");
    }
    return selection;
}

void apply_selection(trace_id_t trid, const EventSelection &selection)
{
    for (const auto &spec : selection.usdt) {
        size_t attached = 0;
        int err = posix_trace_usdt_attach(trid, spec.c_str(), &attached);
        if (err == ENOENT && spec == "*")
            continue; // no probes at all: fine for the default
        if (err == ENOENT)
            fail("no USDT probe " + spec +
                 " in the traced process (see: posixtrace probes -p PID)");
        if (err)
            fail("cannot attach USDT probes " + spec + ": " + std::strerror(err));
    }
    // What --events leaves out is filtered in the kernel.
    trace_event_set_t filtered;
    posix_trace_eventset_empty(&filtered);
    int is_member = 0;
    if (!selection.system) {
        trace_event_set_t system;
        posix_trace_eventset_fill(&system, POSIX_TRACE_SYSTEM_EVENTS);
        for (trace_event_id_t id = 0; id < POSIX_TRACE_TD_EVENT_FIRST; ++id)
            if (posix_trace_eventset_ismember(id, &system, &is_member) == 0 && is_member)
                posix_trace_eventset_add(id, &filtered);
    }
    for (trace_event_id_t id = POSIX_TRACE_TD_EVENT_FIRST;
         id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT; ++id)
        if (!selection.thread_events.count(id))
            posix_trace_eventset_add(id, &filtered);
    if (!selection.user)
        for (trace_event_id_t id = POSIX_TRACE_UNNAMED_USEREVENT; id < POSIX_TRACE_USDT_EVENT_FIRST;
             ++id)
            posix_trace_eventset_add(id, &filtered);
    posix_trace_set_filter(trid, &filtered, POSIX_TRACE_SET_EVENTSET);
}

trace_event_id_t event_id_named(trace_id_t trid, const std::string &wanted)
{
    posix_trace_eventtypelist_rewind(trid);
    for (;;) {
        trace_event_id_t id;
        int unavailable = 1;
        char name[TRACE_EVENT_NAME_MAX];
        if (posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) != 0 || unavailable)
            return 0;
        if (posix_trace_eventid_get_name(trid, id, name) == 0 && wanted == name)
            return id;
    }
}

struct StringArgument {
    std::string probe; // PROVIDER:NAME
    unsigned index;
};

// --usdt-arg-str PROVIDER:NAME:INDEX, checked before anything starts.
std::vector<StringArgument> parse_string_arguments(const std::vector<std::string> &specs)
{
    std::vector<StringArgument> parsed;
    for (const auto &spec : specs) {
        auto colon = spec.rfind(':');
        std::string probe = colon == std::string::npos ? "" : spec.substr(0, colon);
        std::string index = colon == std::string::npos ? "" : spec.substr(colon + 1);
        if (probe.find(':') == std::string::npos || index.empty() || index.size() > 2 ||
            index.find_first_not_of("0123456789") != std::string::npos || std::stoul(index) > 11)
            fail("--usdt-arg-str takes PROVIDER:NAME:INDEX with INDEX 0-11, not '" + spec + "'");
        parsed.push_back({probe, unsigned(std::stoul(index))});
    }
    return parsed;
}

// The ids whose records carry a decoded string.
std::set<trace_event_id_t> decode_strings(trace_id_t trid,
                                          const std::vector<StringArgument> &arguments)
{
    std::set<trace_event_id_t> ids;
    for (const auto &argument : arguments) {
        int err = posix_trace_usdt_decode_string(trid, argument.probe.c_str(), argument.index);
        if (err == ENOENT)
            fail("--usdt-arg-str: " + argument.probe +
                 " is not traced (add usdt:" + argument.probe + " to --events)");
        if (err)
            fail("--usdt-arg-str: " + std::string(std::strerror(err)));
        ids.insert(event_id_named(trid, argument.probe));
    }
    return ids;
}

struct Totals {
    uint64_t events = 0;
    uint64_t lost = 0;
};

// Reads one event (waiting up to 100 ms) and prints it; false when none came.
bool print_next(trace_id_t trid, bool json, const std::set<trace_event_id_t> &with_string,
                EventNames &names, Totals &totals)
{
    posix_trace_event_info info;
    unsigned char data[8192];
    size_t length = 0;
    int unavailable = 0;
    timespec deadline = realtime_in(100);
    int err = posix_trace_timedgetnext_event(trid, &info, data, sizeof data, &length, &unavailable,
                                             &deadline);
    if (err || unavailable)
        return false;
    const std::string &event_name = names.of(info.posix_event_id);
    if (info.posix_event_id == POSIX_TRACE_OVERFLOW &&
        length >= sizeof(posix_trace_overflow_data)) {
        posix_trace_overflow_data overflow;
        std::memcpy(&overflow, data, sizeof overflow);
        totals.lost += overflow.lost;
    } else {
        ++totals.events;
    }
    bool string = with_string.count(info.posix_event_id) != 0;
    std::string line = json ? format_json(info, event_name, data, length, string)
                            : format_text(info, event_name, data, length, string);
    posix_trace_namespace_ids ids;
    add_namespace_ids(line, posix_trace_event_namespace_ids(trid, &ids) == 0 ? &ids : nullptr,
                      json);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
    return true;
}

// The trace log -o writes to; fails with a one-line message.
UniqueFd open_output(const std::string &path)
{
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        fail("cannot write " + path + ": " + std::strerror(errno));
    return UniqueFd(fd);
}

// With -o the events go to the log, not to the terminal: the stream flushes
// itself to the log whenever it fills (POSIX_TRACE_FLUSH), so a long
// recording keeps everything in bounded memory.
void prepare_log_attributes(trace_attr_t &attr)
{
    posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_FLUSH);
    posix_trace_attr_setlogfullpolicy(&attr, POSIX_TRACE_APPEND);
}

bool duration_over(const RecordOptions &options, std::chrono::steady_clock::time_point begin)
{
    return options.duration > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() >=
               options.duration;
}

// Pushed while recording, the stream goes into its log (and the server)
// every second rather than only when it fills; each flush is recorded, as
// posix_trace_flush records one: two system events a second.
constexpr auto kPushedFlushEvery = std::chrono::seconds(1);

int record_to_log(const RecordOptions &options, trace_id_t trid, Target &target,
                  std::chrono::steady_clock::time_point begin, const std::string &log_path,
                  RecordPush *push)
{
    int exit_status = 0;
    bool ended = false;
    auto flushed_at = begin;
    while (!stop_requested() && !ended && !duration_over(options, begin)) {
        usleep(20'000);
        ended = target.ended(exit_status);
        if (push && std::chrono::steady_clock::now() - flushed_at >= kPushedFlushEvery) {
            posix_trace_flush(trid);
            flushed_at = std::chrono::steady_clock::now();
        }
    }
    posix_trace_stop(trid);
    posix_trace_counters counters{};
    posix_trace_get_counters(trid, &counters);
    std::string lost = describe_losses(counters.lost_in_kernel + counters.lost_in_stream, trid);
    std::vector<std::string> left_out = describe_left_out(trid);
    int err = posix_trace_shutdown(trid); // flushes the rest, writes the trailer
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (err)
        fail("the trace log " + log_path + " is incomplete: " + std::strerror(err));
    std::string log = options.output.empty() ? "" : ", trace log " + options.output;
    std::fprintf(stderr, "posixtrace: %lu events, %s, %.2f s%s\n", (unsigned long)counters.recorded,
                 lost.c_str(), seconds, log.c_str());
    for (const auto &sentence : left_out)
        std::fprintf(stderr, "posixtrace: %s\n", sentence.c_str());
    if (push)
        restore_stop_signals(); // a second Ctrl-C ends the push, the log kept
    bool pushed = !push || push->finish();
    if (!ended)
        target.collect_status(exit_status);
    return (pushed || exit_status != 0) ? exit_status : 1;
}

int run(const RecordOptions &options)
{
    if ((options.pid != 0) == !options.command.empty())
        fail("give -p PID or -- COMMAND [ARGS...]");
    EventSelection selection = parse_events(options.events);
    std::vector<StringArgument> string_arguments = parse_string_arguments(options.usdt_strings);

    if (!options.output.empty() && options.json)
        fail("--json prints events live; with -o they go to the log (see: posixtrace dump --json)");
    if (!options.push.empty() && options.json)
        fail("--json prints events live; with --push they go to the server");
    std::unique_ptr<RecordPush> push =
        options.push.empty() ? nullptr : std::make_unique<RecordPush>(options.push);
    bool to_log = !options.output.empty() || push;
    std::string log_path = options.output;
    UniqueFd output = !options.output.empty() ? open_output(options.output)
                      : push                  ? push->open_spool(log_path)
                                              : UniqueFd();
    struct stat output_status;
    if (push && (fstat(output.get(), &output_status) != 0 || !S_ISREG(output_status.st_mode)))
        fail("--push: " + log_path +
             " is not a regular file (the log is read back as it is "
             "written)");
    Target target =
        options.command.empty() ? Target::running(options.pid) : Target::command(options.command);
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setmaxdatasize(&attr, 8192);
    posix_trace_attr_setinherited(&attr, options.inherit ? POSIX_TRACE_INHERITED
                                                         : POSIX_TRACE_CLOSE_FOR_CHILD);
    // Room for bursts while the output catches up (a terminal or a pipe
    // prints slower than a probe fires).
    posix_trace_attr_setstreamsize(&attr, kRecordStreamBytes);
    if (to_log)
        prepare_log_attributes(attr);
    StreamOwner stream(target.pid(), attr, to_log ? output.get() : -1);
    trace_id_t trid = stream.get();
    apply_selection(trid, selection);
    std::set<trace_event_id_t> with_string = decode_strings(trid, string_arguments);
    if (push)
        push->follow(log_path, output.get());

    catch_stop_signals();
    static char output_buffer[1 << 20];
    std::setvbuf(stdout, output_buffer, _IOFBF, sizeof output_buffer);
    auto begin = std::chrono::steady_clock::now();
    posix_trace_start(trid);
    target.release();

    if (to_log)
        return record_to_log(options, trid, target, begin, log_path, push.get());
    Totals totals;
    EventNames names(trid);
    int exit_status = 0;
    bool ended = false;
    while (!stop_requested() && !ended) {
        print_next(trid, options.json, with_string, names, totals);
        ended = target.ended(exit_status);
        if (duration_over(options, begin))
            break;
    }
    posix_trace_stop(trid);
    while (print_next(trid, options.json, with_string, names, totals)) {
    }
    std::string lost = describe_losses(totals.lost, trid);
    std::vector<std::string> left_out = describe_left_out(trid);
    posix_trace_shutdown(trid);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    std::fflush(stdout);
    std::fprintf(stderr, "posixtrace: %lu events, %s, %.2f s\n", (unsigned long)totals.events,
                 lost.c_str(), seconds);
    for (const auto &sentence : left_out)
        std::fprintf(stderr, "posixtrace: %s\n", sentence.c_str());
    if (!ended) // stopped by Ctrl-C or --duration: the command goes on
        target.collect_status(exit_status);
    return exit_status;
}

} // namespace

void add_record_command(CLI::App &app)
{
    auto options = std::make_shared<RecordOptions>();
    CLI::App *command = app.add_subcommand(
        "record", "Trace a running process (-p PID) or a command, printing its events live");
    command->footer(
        "Examples:\n"
        "  posixtrace record -p 1234\n"
        "  posixtrace record --events usdt:python:audit --usdt-arg-str python:audit:0 \\\n"
        "      -- python3.11 script.py\n"
        "  posixtrace record -p 1234 --duration 5 --json\n"
        "  posixtrace record -p 1234 --push http://127.0.0.1:8123\n"
        "  posixtrace record --inherit --events usdt,system -- make -j2");
    command->add_option("-p,--pid", options->pid, "Process to trace")->check(CLI::PositiveNumber);
    command->add_option("-o,--output", options->output,
                        "Write a trace log to this file instead of printing events "
                        "(read it with posixtrace dump / export)");
    command->add_option("--push", options->push,
                        "Ship the events into ClickHouse while recording: http(s)://[user@]"
                        "host:port (the tables of share/posixtrace/clickhouse.sql; the trace "
                        "log, without -o a file in $TMPDIR, is kept if the server did not take "
                        "it all)");
    command
        ->add_option("--events", options->events,
                     "Comma list: user, usdt, usdt:PROVIDER:NAME, td, td:NAME, system")
        ->capture_default_str();
    command->add_flag("--inherit", options->inherit,
                      "Also trace the processes the target creates from now on, from their first "
                      "instruction (decided in the kernel at fork)");
    command->add_option("--duration", options->duration, "Stop after this many seconds")
        ->check(CLI::PositiveNumber);
    command->add_flag("--json", options->json, "One JSON object per event");
    command
        ->add_option("--usdt-arg-str", options->usdt_strings,
                     "PROVIDER:NAME:INDEX: decode that argument as a string, in the kernel")
        ->allow_extra_args(false); // one value per use: "--" must end the options
    command->add_option("command", options->command, "Command to run and trace (after --)");
    command->callback([options] { throw CLI::RuntimeError(run(*options)); });
}

} // namespace posixtrace::cli
