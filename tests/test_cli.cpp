// The posixtrace command-line tool, run as a user would run it.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_support;

namespace {

size_t count_containing(const std::vector<std::string> &lines, const std::string &text)
{
    size_t n = 0;
    for (const auto &line : lines)
        n += line.find(text) != std::string::npos;
    return n;
}

const char *kAuditScript =
    "\"import sys, gc\nfor i in range(1000): sys.audit('posixtrace.test', i)\n"
    "for i in range(100): gc.collect()\nsys.exit(3)\"";

} // namespace

TEST_CASE("cli: record -- CMD traces the command from its first instruction", "[cli]")
{
    Run run = run_cli(std::string("record --events usdt:python:audit,usdt:python:gc__start "
                                  "-- /usr/bin/python3.11 -c ") +
                      kAuditScript);
    CHECK(run.status == 3); // the command's own exit status
    auto lines = run.lines();
    // 1,000 from the script, more from the interpreter's own start-up audits.
    CHECK(count_containing(lines, " python:audit ") >= 1000);
    CHECK(count_containing(lines, " python:gc__start ") >= 100);
    CHECK(run.err.find("0 lost") != std::string::npos);
}

TEST_CASE("cli: record --json prints one object a line with the contract's keys", "[cli]")
{
    Run run = run_cli(std::string("record --json --events usdt:python:audit,system -- "
                                  "/usr/bin/python3.11 -c ") +
                      kAuditScript);
    auto lines = run.lines();
    REQUIRE(lines.size() >= 1002);
    for (const auto &line : lines) {
        CHECK(line.front() == '{');
        CHECK(line.back() == '}');
        for (const char *key : {"\"ts_ns\":", "\"pid\":", "\"tid\":", "\"event\":", "\"id\":",
                                "\"data_hex\":", "\"truncated\":"})
            CHECK(line.find(key) != std::string::npos);
    }
    CHECK(lines.front().find("\"event\":\"posix_trace_start\"") != std::string::npos);
    CHECK(lines.back().find("\"event\":\"posix_trace_stop\"") != std::string::npos);
    size_t audits = 0;
    for (const auto &line : lines)
        if (line.find("\"event\":\"python:audit\"") != std::string::npos) {
            ++audits;
            CHECK(line.find("\"args\":[") != std::string::npos);
        }
    CHECK(audits >= 1000);
}

TEST_CASE("cli: bad input gives one line on stderr and a non-zero status", "[cli]")
{
    struct Case {
        std::string arguments;
        std::string message;
        int status;
    } cases[] = {
        {"record -p 999999", "posixtrace: no process 999999", 1},
        {"record -p 2", "kernel thread", 1},
        {"record --events bogus -- /bin/true", "unknown event class 'bogus'", 1},
        {"record --events usdt:python:nope -- /usr/bin/python3.11 -c pass",
         "no USDT probe python:nope", 1},
        {"record -- /nonexistent/command", "cannot run /nonexistent/command", 127},
        {"record", "give -p PID or -- COMMAND", 1},
        {"probes /etc/passwd", "not an ELF file", 1},
        {"probes /nonexistent/file", "/nonexistent/file: No such file or directory", 1},
        {"probes /tmp/posixtrace-truncated.elf", "not an ELF file (or a damaged one)", 1},
        {"record --events usdt:libstdcxx:nope -- /bin/true", "no USDT probe libstdcxx:nope", 1},
        {"threads", "give -p PID or -- COMMAND", 1},
        {"threads -p 999999", "posixtrace: no process 999999", 1},
        {"threads -p 2", "kernel thread", 1},
        {"threads -- /nonexistent/command", "cannot run /nonexistent/command", 127},
    };
    { // an ELF file cut short: its section headers are past the end
        std::ifstream whole("/usr/bin/python3.11", std::ios::binary);
        std::vector<char> head(4096);
        whole.read(head.data(), std::streamsize(head.size()));
        std::ofstream("/tmp/posixtrace-truncated.elf", std::ios::binary).write(head.data(), 4096);
    }
    for (const auto &c : cases) {
        INFO(c.arguments);
        Run run = run_cli(c.arguments);
        CHECK(run.status == c.status);
        CHECK(run.err.find(c.message) != std::string::npos);
        CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
    }
}

TEST_CASE("cli: probes lists a binary's USDT probes", "[cli]")
{
    Run run = run_cli("probes /usr/bin/python3.11");
    CHECK(run.status == 0);
    auto lines = run.lines();
    REQUIRE(lines.size() >= 2);
    CHECK(lines[0].find("PROBE") == 0);
    CHECK(count_containing(lines, "python:audit ") == 1);
    CHECK(count_containing(lines, "python:gc__start ") == 1);
}

TEST_CASE("cli: record --usdt-arg-str decodes python:audit's event name in the kernel", "[cli]")
{
    Run run = run_cli(std::string("record --events usdt:python:audit --usdt-arg-str python:audit:0 "
                                  "-- /usr/bin/python3.11 -c ") +
                      kAuditScript);
    CHECK(run.status == 3);
    // Every one of the script's 1,000 events, none missed, none extra.
    CHECK(count_containing(run.lines(), "str=\"posixtrace.test\"") == 1000);

    Run bad = run_cli("record --events usdt:python:audit --usdt-arg-str python:audit -- /bin/true");
    CHECK(bad.status == 1);
    CHECK(bad.err.find("PROVIDER:NAME:INDEX") != std::string::npos);
}

namespace {
std::string helper_path(const char *name)
{
    std::string cli = cli_path();
    return cli.substr(0, cli.rfind("/bin/")) + "/tests/helpers/" + name;
}
} // namespace

TEST_CASE("cli: record -- CMD sees the probes of the libraries the command loads", "[cli]")
{
    // libstdc++'s probes: the command is held at its exec, before its
    // dynamic linker maps libstdc++, and none of its 100 throws is missed.
    Run run = run_cli("record --events usdt:libstdcxx:throw,usdt:libstdcxx:catch -- " +
                      helper_path("thrower") + " 100");
    CHECK(run.status == 0);
    auto lines = run.lines();
    CHECK(count_containing(lines, " libstdcxx:throw ") == 100);
    CHECK(count_containing(lines, " libstdcxx:catch ") == 100);
    CHECK(run.err.find("posixtrace: 200 events, 0 lost") != std::string::npos);
}

TEST_CASE("cli: record --inherit follows children across fork and exec", "[cli]")
{
    const std::string command = " -- /bin/sh -c '/bin/true; exit 3'";
    Run inherit = run_cli("record --inherit --events system" + command);
    CHECK(inherit.status == 3);
    auto lines = inherit.lines();
    CHECK(count_containing(lines, " process_fork ") == 1);
    CHECK(count_containing(lines, "inherited=true") == 1);
    CHECK(count_containing(lines, "path=\"/bin/true\"") == 1);
    CHECK(count_containing(lines, " process_exit ") == 2);
    CHECK(count_containing(lines, "exit_code=0") == 1); // /bin/true
    CHECK(count_containing(lines, "exit_code=3") == 1); // the shell

    Run alone = run_cli("record --json --events system" + command);
    CHECK(alone.status == 3);
    lines = alone.lines();
    CHECK(count_containing(lines, "\"event\":\"process_fork\"") == 1);
    CHECK(count_containing(lines, "\"inherited\":false") == 1);
    CHECK(count_containing(lines, "\"event\":\"process_exec\"") == 0);
    CHECK(count_containing(lines, "\"event\":\"process_exit\"") == 1);
    CHECK(count_containing(lines, "\"exit_code\":3") == 1);
}

TEST_CASE("cli: record --events td prints the thread events with their decoded fields", "[cli]")
{
    // churn 1: a "keeper" thread and a wave of 50 threads, all joined.
    Run run = run_cli("record --events td:create,td:death,td:concurrency -- " +
                      helper_path("thread_workload") + " churn 1");
    CHECK(run.status == 0);
    auto lines = run.lines();
    CHECK(count_containing(lines, " td_create ") == 51);
    CHECK(count_containing(lines, " new_thread=") == 51);
    CHECK(count_containing(lines, " td_death ") == 52); // and the main thread
    CHECK(count_containing(lines, " exit_code=0") == 52);
    CHECK(count_containing(lines, " td_concurrency ") == 51 + 52);
    CHECK(count_containing(lines, " threads=52") == 1); // the peak
    CHECK(run.err.find("posixtrace: 206 events, 0 lost") != std::string::npos);

    Run json = run_cli("record --json --events td:create -- " + helper_path("thread_workload") +
                       " churn 1");
    lines = json.lines();
    REQUIRE(lines.size() == 51);
    CHECK(count_containing(lines, "\"event\":\"td_create\"") == 51);
    CHECK(count_containing(lines, "\"new_thread\":") == 51);
    CHECK(count_containing(lines, "\"name\":\"thread_workload\"") == 51);
}

namespace {
// The rows of a `posixtrace threads` table: lines that start with a tid.
std::vector<std::string> thread_rows(const std::vector<std::string> &lines)
{
    std::vector<std::string> rows;
    for (const auto &line : lines) {
        std::istringstream words(line);
        long tid = 0;
        if (words >> tid && tid > 0)
            rows.push_back(line);
    }
    return rows;
}

std::vector<std::string> split_lines(const std::string &text)
{
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);)
        lines.push_back(line);
    return lines;
}

std::string shell_output(const std::string &command)
{
    FILE *pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
        out.append(buffer, n);
    pclose(pipe);
    return out;
}
} // namespace

TEST_CASE("cli: threads prints every thread of a command that creates and ends 150", "[cli]")
{
    Run run = run_cli("threads -- " + helper_path("thread_workload") + " churn 3");
    CHECK(run.status == 0);
    auto lines = run.lines();
    for (const auto &line : lines) {
        INFO(line);
        CHECK(line.size() < 80);
    }
    auto rows = thread_rows(lines);
    CHECK(rows.size() == 152); // main, keeper, 150 workers: none left out off a terminal
    CHECK(count_containing(rows, " keeper ") == 1);
    CHECK(count_containing(rows, " churn-") == 150); // renamed after creation
    CHECK(count_containing(rows, " X ") == 152);
    CHECK(count_containing(rows, " exit") == 152);
    CHECK(run.err.find("posixtrace: 152 threads (151 created, 152 exited)") != std::string::npos);
    INFO(run.err);
    CHECK(lost_only_unreported_switches(run.err));
}

TEST_CASE("cli: threads under a terminal multiplexer shows the threads live", "[cli]")
{
    const std::string session = "posixtrace-test-" + std::to_string(getpid());
    std::string command = cli_path() + " threads -- " + helper_path("thread_workload") +
                          " churn 8; echo ENDED; sleep 30";
    REQUIRE(std::system(("tmux new-session -d -s " + session + " -x 80 -y 24 \"" + command + "\"")
                            .c_str()) == 0);
    auto capture = [&] { return shell_output("tmux capture-pane -p -t " + session); };

    std::string live; // a screen with both the keeper and a wave of workers alive
    for (int tries = 0; tries < 200 && live.empty(); ++tries) {
        std::string screen = capture();
        if (screen.find(" keeper ") != std::string::npos &&
            screen.find(" churn-") != std::string::npos && screen.find(" new") != std::string::npos)
            live = screen;
        else
            usleep(50000);
    }
    std::string last;
    for (int tries = 0; tries < 300 && last.find("posixtrace: 402 threads") == std::string::npos;
         ++tries) {
        usleep(50000);
        last = capture();
    }
    // The session is killed only once posixtrace has exited: a sanitizer
    // build's leak check at exit stops its threads with ptrace, and the
    // SIGCONT of the session's end would cancel a stop not yet taken, leaving
    // the process stopped for ever (its BPF side attached).
    for (int tries = 0; tries < 600 && capture().find("ENDED") == std::string::npos; ++tries)
        usleep(50000);
    std::system(("tmux kill-session -t " + session).c_str());

    INFO(live);
    REQUIRE(!live.empty());
    auto screen = split_lines(live);
    CHECK(screen.size() <= 24);
    REQUIRE(screen.size() > 5);
    CHECK(screen[0].find("posixtrace threads: pid ") == 0);
    CHECK(screen[0].find("(thread_workload)") != std::string::npos);
    CHECK(screen[1].find("threads: live ") == 0);
    CHECK(
        live.find("    TID NAME            S CPU     RUN s      VOL    INVOL    SIG   LOCK MARK") !=
        std::string::npos);
    auto rows = thread_rows(screen);
    CHECK(rows.size() >= 3);
    for (const auto &row : rows) {
        INFO(row);
        CHECK(row.size() < 80);
    }
    // After the command ended: the last view and the summary stay on screen.
    INFO(last);
    CHECK(last.find("posixtrace: 402 threads (401 created, 402 exited)") != std::string::npos);
    CHECK(lost_only_unreported_switches(last));
}

TEST_CASE("cli: record -o writes a trace log that dump reads after the command ended", "[cli][log]")
{
    char path[] = "/tmp/posixtrace-record-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    Run record =
        run_cli(std::string("record -o ") + path +
                " --events usdt:python:audit,system -- /usr/bin/python3.11 -c " + kAuditScript);
    CHECK(record.status == 3); // the command's own exit status
    CHECK(record.out.empty()); // the events went to the log
    CHECK(record.err.find("trace log") != std::string::npos);
    CHECK(record.err.find(" 0 lost") != std::string::npos);

    Run dump = run_cli(std::string("dump ") + path);
    CHECK(dump.status == 0);
    auto lines = dump.lines();
    CHECK(count_containing(lines, "python:audit") >= 1000);
    CHECK(count_containing(lines, "posix_trace_start") == 1);
    CHECK(count_containing(lines, "process_exit") == 1);
    Run json = run_cli(std::string("dump --json ") + path);
    CHECK(json.status == 0);
    CHECK(json.lines().size() == lines.size());
    CHECK(count_containing(json.lines(), "\"event\":\"python:audit\"") >= 1000);
    unlink(path);

    SECTION("bad input: an unwritable path, -o with --json")
    {
        Run unwritable = run_cli("record -o /nonexistent/dir/x.ptlog -- /bin/true");
        CHECK(unwritable.status != 0);
        CHECK(unwritable.err.find("cannot write /nonexistent/dir/x.ptlog") != std::string::npos);
        CHECK(std::count(unwritable.err.begin(), unwritable.err.end(), '\n') == 1);
        Run both = run_cli("record -o /tmp/x.ptlog --json -- /bin/true");
        CHECK(both.status != 0);
        CHECK(std::count(both.err.begin(), both.err.end(), '\n') == 1);
    }
}

TEST_CASE("cli: events come in timestamp order, thread events woken from interrupts included",
          "[cli]")
{
    // Timer wakeups run in interrupts, nested in whatever BPF program was
    // recording on that CPU: the stream must still deliver in order.
    const char *script = "\"import threading, time\n"
                         "def work():\n"
                         "    for i in range(600000):\n"
                         "        if i % 500 == 0: time.sleep(0.0001)\n"
                         "ts = [threading.Thread(target=work) for _ in range(3)]\n"
                         "[t.start() for t in ts]; [t.join() for t in ts]\"";
    Run run = run_cli(std::string("record --json --events td -- /usr/bin/python3.11 -c ") + script);
    REQUIRE(run.status == 0);
    auto lines = run.lines();
    CHECK(lines.size() > 5000);
    unsigned long long previous = 0;
    size_t out_of_order = 0;
    for (const auto &line : lines) {
        auto at = line.find("\"ts_ns\":");
        REQUIRE(at != std::string::npos);
        unsigned long long ts = std::stoull(line.substr(at + 8));
        out_of_order += ts < previous;
        previous = std::max(previous, ts);
    }
    CHECK(out_of_order == 0);
}

TEST_CASE("demo: prints its user events and its thread events decoded", "[cli]")
{
    std::string demo = cli_path();
    demo.replace(demo.rfind("/bin/posixtrace"), std::string::npos, "/examples/demo");
    Run run = run_shell(demo);
    REQUIRE(run.status == 0);
    auto lines = run.lines();
    CHECK(count_containing(lines, " demo:request ") == 12);
    CHECK(count_containing(lines, "\"job ") == 12);
    CHECK(count_containing(lines, " demo:reply ") == 12);
    size_t created = 0;
    for (const auto &line : lines) {
        CHECK(line.find(" bytes") == std::string::npos); // every event's data decoded
        if (line.find(" td_create ") != std::string::npos) {
            CHECK(line.find(" new_thread=") != std::string::npos);
            ++created;
        }
        if (line.find(" td_concurrency ") != std::string::npos)
            CHECK(line.find(" threads=") != std::string::npos);
        // Not counted: the kernel wakes the joining thread before the exit's
        // tracepoint, so the last worker's death may come after the stop.
        if (line.find(" td_death ") != std::string::npos)
            CHECK(line.find(" exit_code=0") != std::string::npos);
    }
    CHECK(created == 3); // the three workers, reported as each is made
}
