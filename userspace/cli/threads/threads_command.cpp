// posixtrace threads: a live view of the threads of a process, built from
// its TD events (public API only). On a terminal the view is redrawn about
// once a second; otherwise the final table alone is printed.
#include "threads_command.hpp"

#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <sys/ioctl.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../loss_summary.hpp"
#include "../target.hpp"
#include "thread_screen.hpp"
#include "thread_table.hpp"
#include "util/text_file.hpp"

namespace posixtrace::cli {
namespace {

struct ThreadsOptions {
    pid_t pid = 0;
    std::vector<std::string> command;
    double interval = 1.0;
    double duration = 0;
};

constexpr size_t kThreadsStreamBytes = 64u << 20;
constexpr uint64_t kKeepExitedNs = 5'000'000'000; // exited threads stay on screen this long

// The TD events the view is built from (td_ready and td_idle would only
// cost: the state after a switch says enough).
constexpr td_event_e kViewEvents[] = {TD_CREATE,     TD_DEATH,   TD_REAP,       TD_SWITCHTO,
                                      TD_SWITCHFROM, TD_SLEEP,   TD_PREEMPT,    TD_CATCHSIG,
                                      TD_LOCK_TRY,   TD_TIMEOUT, TD_CONCURRENCY};

uint64_t realtime_ns()
{
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
}

std::string process_name(pid_t pid)
{
    return read_first_line("/proc/" + std::to_string(pid) + "/comm");
}

// Everything but the view's TD events (and the loss reports) is filtered
// out in the kernel.
void keep_only_view_events(trace_id_t trid)
{
    trace_event_set_t filtered;
    posix_trace_eventset_fill(&filtered, POSIX_TRACE_ALL_EVENTS);
    posix_trace_eventset_del(POSIX_TRACE_OVERFLOW, &filtered);
    posix_trace_eventset_del(POSIX_TRACE_RESUME, &filtered);
    for (td_event_e event : kViewEvents)
        posix_trace_eventset_del(POSIX_TRACE_TD_EVENT_ID(event), &filtered);
    if (int err = posix_trace_set_filter(trid, &filtered, POSIX_TRACE_SET_EVENTSET))
        fail(std::string("cannot select the thread events: ") + std::strerror(err));
}

// The alternate screen of a terminal, left (and the cursor shown again)
// however the command ends.
class TerminalScreen {
public:
    TerminalScreen() { write("\x1b[?1049h\x1b[?25l"); }
    ~TerminalScreen() { write("\x1b[?25h\x1b[?1049l"); }
    TerminalScreen(const TerminalScreen &) = delete;
    TerminalScreen &operator=(const TerminalScreen &) = delete;

    static size_t lines()
    {
        winsize size{};
        return ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 ? size.ws_row : 24;
    }
    void draw(const std::vector<std::string> &lines)
    {
        std::string frame = "\x1b[H";
        for (const auto &line : lines)
            frame += line + "\x1b[K\n";
        frame += "\x1b[J";
        write(frame);
    }

private:
    static void write(const std::string &bytes)
    {
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
        std::fflush(stdout);
    }
};

class ThreadView {
public:
    ThreadView(trace_id_t trid, pid_t pid) : trid_(trid), header_{pid, process_name(pid)} {}

    ThreadTable &table() { return table_; }

    // Applies the events that arrive until `deadline`, or, without one,
    // those already in the stream (after it stopped).
    void apply_events(const timespec *deadline)
    {
        posix_trace_event_info info;
        td_event_data data;
        size_t length = 0;
        int unavailable = 0;
        auto next = [&] {
            return deadline ? posix_trace_timedgetnext_event(trid_, &info, &data, sizeof data,
                                                             &length, &unavailable, deadline)
                            : posix_trace_trygetnext_event(trid_, &info, &data, sizeof data,
                                                           &length, &unavailable);
        };
        while (next() == 0 && !unavailable)
            count(info, data, length);
    }

    std::vector<std::string> render(double elapsed, const ScreenLayout &layout)
    {
        header_.elapsed_seconds = elapsed;
        return render_threads(table_, header_, realtime_ns(), layout);
    }

    // Two lines (the second longer only when the kernel hid events).
    std::string summary(double elapsed, trace_id_t trid) const
    {
        const ThreadTotals &totals = table_.totals();
        char line[256];
        std::snprintf(
            line, sizeof line,
            "posixtrace: %zu threads (%lu created, %lu exited), %lu switches, %lu signals, "
            "%lu lock waits\nposixtrace: %lu events, %s, %.2f s",
            table_.rows().size(), (unsigned long)totals.created, (unsigned long)totals.exited,
            (unsigned long)totals.switches, (unsigned long)totals.signals,
            (unsigned long)totals.lock_waits, (unsigned long)header_.events,
            describe_losses(header_.lost, trid).c_str(), elapsed);
        return line;
    }

private:
    void count(const posix_trace_event_info &info, const td_event_data &data, size_t length)
    {
        if (info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data overflow;
            std::memcpy(&overflow, &data, std::min(length, sizeof overflow));
            header_.lost += overflow.lost;
            return;
        }
        trace_event_id_t first = POSIX_TRACE_TD_EVENT_FIRST;
        if (info.posix_event_id < first ||
            info.posix_event_id >= first + POSIX_TRACE_TD_EVENT_COUNT || length != sizeof data)
            return;
        ++header_.events;
        table_.apply(td_event_e(info.posix_event_id - first + 1), data,
                     uint64_t(info.posix_timestamp.tv_sec) * 1'000'000'000u +
                         uint64_t(info.posix_timestamp.tv_nsec));
    }

    trace_id_t trid_;
    ScreenHeader header_;
    ThreadTable table_;
};

void print_lines(const std::vector<std::string> &lines)
{
    for (const auto &line : lines)
        std::printf("%s\n", line.c_str());
}

int run(const ThreadsOptions &options)
{
    if ((options.pid != 0) == !options.command.empty())
        fail("give -p PID or -- COMMAND [ARGS...]");
    Target target =
        options.command.empty() ? Target::running(options.pid) : Target::command(options.command);
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    posix_trace_attr_setstreamsize(&attr, kThreadsStreamBytes);
    StreamOwner stream(target.pid(), attr);
    keep_only_view_events(stream.get());
    catch_stop_signals();

    ThreadView view(stream.get(), target.pid());
    auto begin = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    if (int err = posix_trace_start(stream.get()))
        fail(std::string("cannot start tracing: ") + std::strerror(err));
    seed_from_proc(view.table(), target.pid()); // the threads that were there before
    target.release();

    bool on_terminal = isatty(STDOUT_FILENO);
    std::unique_ptr<TerminalScreen> screen;
    if (on_terminal)
        screen = std::make_unique<TerminalScreen>();
    long interval_ms = std::max(50L, long(options.interval * 1000));
    int exit_status = 0;
    bool ended = false;
    while (!stop_requested() && !ended) {
        timespec next_redraw = realtime_in(interval_ms);
        view.apply_events(&next_redraw);
        if (screen)
            screen->draw(view.render(
                elapsed(), {std::max<size_t>(TerminalScreen::lines(), 8) - 1, kKeepExitedNs}));
        ended = target.ended(exit_status);
        if (options.duration > 0 && elapsed() >= options.duration)
            break;
    }
    posix_trace_stop(stream.get());
    view.apply_events(nullptr);
    double seconds = elapsed();
    if (screen) {
        auto last =
            view.render(seconds, {std::max<size_t>(TerminalScreen::lines(), 8) - 3, kKeepExitedNs});
        screen.reset(); // back to the normal screen, where the last view stays
        print_lines(last);
    } else {
        print_lines(view.render(seconds, {}));
    }
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", view.summary(seconds, stream.get()).c_str());
    if (!ended)
        target.collect_status(exit_status);
    return exit_status;
}

} // namespace

void add_threads_command(CLI::App &app)
{
    auto options = std::make_shared<ThreadsOptions>();
    CLI::App *command = app.add_subcommand(
        "threads",
        "Live view of the threads of a process (-p PID) or of a command, from their TD events");
    command->footer(
        "Columns: TID, NAME (comm, renames included), S (R on a CPU, W runnable, S sleeping,\n"
        "L waiting for a lock, T stopped, X exited), CPU (current or last), RUN s (time on a\n"
        "CPU while traced), VOL / INVOL (voluntary / involuntary context switches), SIG\n"
        "(signals delivered), LOCK (waits on a contended futex), MARK (new: created while\n"
        "traced; "
        "exit, exit N, sig N: how it ended).\n"
        "On a terminal the view is redrawn every --interval seconds; otherwise only the\n"
        "final table is printed. A summary goes to standard error at the end.\n"
        "Examples:\n"
        "  posixtrace threads -p 1234\n"
        "  posixtrace threads -- python3.11 server.py\n"
        "  posixtrace threads -p 1234 --duration 10 > threads.txt");
    command->add_option("-p,--pid", options->pid, "Process to watch")->check(CLI::PositiveNumber);
    command->add_option("--interval", options->interval, "Seconds between redraws")
        ->check(CLI::Range(0.05, 3600.0))
        ->capture_default_str();
    command->add_option("--duration", options->duration, "Stop after this many seconds")
        ->check(CLI::PositiveNumber);
    command->add_option("command", options->command, "Command to run and watch (after --)");
    command->callback([options] { throw CLI::RuntimeError(run(*options)); });
}

} // namespace posixtrace::cli
