// posixtrace record --push against a real ClickHouse (Debian's
// clickhouse-server, started by the test): a traced process's events reach
// the server while it is traced, all of them once the recording ends, and
// a server that goes away loses nothing of the log.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "clickhouse_support.hpp"
#include "test_support.hpp"

using cli_support::cli_path;
using cli_support::Run;
using cli_support::run_cli;
using clickhouse_support::ClickHouseServer;
using test_support::ChildConversation;
using test_support::helper_path;
using test_support::TempDir;

namespace {

using Emitter = test_support::RepeatEmitter;

// `posixtrace record ARGUMENTS` running in the background, its standard
// error kept in a file; TMPDIR set to `tmpdir`.
class Recorder {
public:
    Recorder(const std::string &arguments, const TempDir &dir) : err_(dir / "record.err")
    {
        std::string command = "exec " + cli_path() + " record " + arguments + " 2>" + err_;
        std::string tmpdir = dir.path();
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            setenv("TMPDIR", tmpdir.c_str(), 1);
            execl("/bin/sh", "sh", "-c", command.c_str(), (char *)nullptr);
            _exit(127);
        }
    }
    ~Recorder()
    {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    // Not exited yet (an exited one is left to interrupt() to reap).
    bool running() const
    {
        siginfo_t info{};
        return waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == 0;
    }
    // Stops it as Ctrl-C would; its exit status.
    int interrupt()
    {
        REQUIRE(kill(pid_, SIGINT) == 0);
        int status = 0;
        REQUIRE(waitpid(pid_, &status, 0) == pid_);
        pid_ = -1;
        REQUIRE(WIFEXITED(status));
        return WEXITSTATUS(status);
    }
    std::string errors() const
    {
        std::ifstream file(err_);
        return {std::istreambuf_iterator<char>(file), {}};
    }

private:
    std::string err_;
    pid_t pid_ = -1;
};

uint64_t stored_events(const ClickHouseServer &server, const std::string &name)
{
    return std::stoull(server.answer("SELECT count() FROM posixtrace.events FINAL WHERE "
                                     "`event.name` = '" +
                                     name + "'"));
}

// Rounds of the emitter until the server holds `at_least` of its events,
// within 60 s; false if it never did. The recorder makes the tables first.
bool rounds_until_stored(Emitter &emitter, const ClickHouseServer &server, uint64_t at_least)
{
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (server.answer("SELECT count() FROM system.tables WHERE database = 'posixtrace' "
                         "AND name = 'events'") != "1\n") {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    while (stored_events(server, "repeat.event") < at_least) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        emitter.round();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return true;
}

std::vector<std::string> logs_in(const TempDir &dir)
{
    std::vector<std::string> logs;
    for (const auto &entry : std::filesystem::directory_iterator(dir.path()))
        if (entry.path().extension() == ".ptlog")
            logs.push_back(entry.path());
    return logs;
}

} // namespace

TEST_CASE("record --push: a process's events reach the server while it is traced, every one "
          "once the recording ends; pushing its log again adds nothing",
          "[push][clickhouse]")
{
    ClickHouseServer server;
    TempDir dir;
    Emitter emitter;
    std::string log = dir / "run.ptlog";
    Recorder recorder("-p " + std::to_string(emitter.pid()) + " -o " + log + " --push " +
                          server.url() + " --events user,system",
                      dir);
    REQUIRE(rounds_until_stored(emitter, server, 1)); // the first that came while traced
    // Rounds before that one may still be on their way: at least 20 more.
    uint64_t live = stored_events(server, "repeat.event");
    for (int i = 0; i < 20; ++i)
        emitter.round();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (stored_events(server, "repeat.event") < live + 20 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(stored_events(server, "repeat.event") >= live + 20);
    REQUIRE(recorder.running()); // they came while it still ran

    int status = recorder.interrupt();
    INFO(recorder.errors());
    CHECK(status == 0);
    Run dump = run_cli("dump --json " + log);
    REQUIRE(dump.status == 0);
    std::string events = std::to_string(dump.lines().size());
    CHECK(recorder.errors().find("push: " + events + " events in " + server.url()) !=
          std::string::npos);
    CHECK(server.answer("SELECT count(), uniqExact(sequence), max(sequence) + 1 FROM "
                        "posixtrace.events FINAL") ==
          events + "\t" + events + "\t" + events + "\n");
    CHECK(server.answer("SELECT events FROM posixtrace.streams FINAL") == events + "\n");
    CHECK(stored_events(server, "posix_trace_start") == 1);
    CHECK(stored_events(server, "posix_trace_stop") == 1);

    Run again = run_cli("push --clickhouse " + server.url() + " " + log);
    INFO(again.err);
    CHECK(again.status == 0);
    CHECK(again.err.find(events + " events, 0 sent, " + events + " already there") !=
          std::string::npos);
    CHECK(server.answer("SELECT count() FROM posixtrace.events") == events + "\n");
}

TEST_CASE("record --push: without -o the log is a file of its own, gone once the server holds "
          "it; kept when the server went away, and a later push completes it",
          "[push][clickhouse]")
{
    ClickHouseServer server;
    TempDir dir;
    SECTION("pushed whole: nothing is left")
    {
        Recorder recorder("--push " + server.url() + " --events user,td,system -- " +
                              helper_path("fleet_workload"),
                          dir);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (recorder.running() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        int status = recorder.interrupt(); // reaped: the recording had ended
        INFO(recorder.errors());
        CHECK(status == 0);
        CHECK(stored_events(server, "fleet.work") == 8 * 5);
        CHECK(logs_in(dir).empty());
    }
    SECTION("a recording that cannot start leaves no file; a log that is not a file is refused")
    {
        Run missing = cli_support::run_shell("TMPDIR=" + dir.path() + " " + cli_path() +
                                             " record --push " + server.url() + " -p 999999999");
        CHECK(missing.status != 0);
        CHECK(missing.err_lines() == 1);
        CHECK(logs_in(dir).empty());
        std::string fifo = dir / "fifo";
        REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
        Run piped =
            cli_support::run_shell("cat " + fifo + " >/dev/null & " + cli_path() +
                                   " record --push " + server.url() + " -o " + fifo + " -- true");
        CHECK(piped.status != 0);
        CHECK(piped.err_lines() == 1);
        CHECK(piped.err.find("is not a regular file") != std::string::npos);
    }
    SECTION("the server went away: the log stays, and says how to push the rest")
    {
        Emitter emitter;
        Recorder recorder("-p " + std::to_string(emitter.pid()) + " --push " + server.url() +
                              " --events user,system",
                          dir);
        REQUIRE(rounds_until_stored(emitter, server, 1));
        server.stop();
        for (int i = 0; i < 20; ++i)
            emitter.round();
        int status = recorder.interrupt();
        std::string errors = recorder.errors();
        INFO(errors);
        CHECK(status != 0);
        std::vector<std::string> kept = logs_in(dir);
        REQUIRE(kept.size() == 1);
        CHECK(errors.find("the trace log is kept in " + kept[0] +
                          ": push it with posixtrace "
                          "push --clickhouse " +
                          server.url() + " " + kept[0]) != std::string::npos);

        server.start();
        Run push = run_cli("push --clickhouse " + server.url() + " " + kept[0]);
        INFO(push.err);
        CHECK(push.status == 0);
        Run dump = run_cli("dump " + kept[0]);
        CHECK(server.answer("SELECT count() FROM posixtrace.events FINAL") ==
              std::to_string(dump.lines().size()) + "\n");
        CHECK(stored_events(server, "repeat.event") >= 21);
    }
}

TEST_CASE("record --push: a server it cannot reach, or --json, is one line and a non-zero "
          "status before anything is traced",
          "[push]")
{
    ClickHouseServer server(false); // its ports are free: nobody listens
    TempDir dir;
    Run refused =
        run_cli("record --push " + server.url() + " -o " + dir / "never.ptlog" + " -- true");
    CHECK(refused.status != 0);
    CHECK(refused.err_lines() == 1);
    CHECK(refused.err.find("nothing was recorded") != std::string::npos);
    Run json = run_cli("record --push " + server.url() + " --json -- true");
    CHECK(json.status != 0);
    CHECK(json.err_lines() == 1);
}
