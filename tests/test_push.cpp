// posixtrace push against a real ClickHouse (Debian's clickhouse-server,
// started by the test): two hosts' traces, recorded in two UTS namespaces of
// their own, pushed into one server and queried with clickhouse-client.
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "../userspace/cli/safe_text.hpp"
#include "attributes/trace_origin.hpp"
#include "clickhouse_support.hpp"
#include "export_support.hpp"
#include "log/log_format.hpp"
#include "log_support.hpp"

using namespace export_support;
using clickhouse_support::ClickHouseServer;

namespace {

constexpr int kWorkers = 8;        // fleet_workload's
constexpr int kWorksEach = 5;      // its fleet.work events a worker
constexpr int kLossyEvents = 3000; // into a 4 KiB LOOP stream
// The lossy stream's name: a quote, a byte that is not UTF-8, a bidi control.
const char *const kLossyName = "lossy \"\xff\xe2\x80\xae";

std::vector<unsigned char> file_bytes(const std::string &path)
{
    std::ifstream file(path, std::ios::binary);
    return std::vector<unsigned char>(std::istreambuf_iterator<char>(file), {});
}

std::vector<std::string> split_lines(const std::string &text)
{
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);)
        lines.push_back(line);
    return lines;
}

// The workload recorded as host `host` would record it: the recorder in a
// UTS namespace of its own, named `host`.
void record_as_host(const std::string &host, const std::string &log)
{
    Run run = run_shell("unshare --uts sh -c 'hostname " + host + " && exec " + cli_path() +
                        " record -o " + log + " --events user,td,system -- " +
                        test_support::helper_path("fleet_workload") + "'");
    INFO(run.err);
    REQUIRE(run.status == 0);
}

// A log of host `host` whose stream lost events: this process's children
// emit kLossyEvents into a 4 KiB LOOP stream, which keeps the newest and
// reports the rest overwritten.
void record_lossy_as_host(const std::string &host, const std::string &log)
{
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (unshare(CLONE_NEWUTS) != 0 || sethostname(host.data(), host.size()) != 0)
            _exit(2);
        int fd = open(log.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        trace_attr_t attr;
        posix_trace_attr_init(&attr);
        posix_trace_attr_setname(&attr, kLossyName);
        posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_LOOP);
        posix_trace_attr_setstreamsize(&attr, 4096);
        trace_id_t trid;
        if (fd < 0 || posix_trace_create_withlog(0, &attr, fd, &trid) != 0)
            _exit(3);
        filter_out_thread_events(trid);
        trace_event_id_t id;
        if (posix_trace_eventid_open("fleet.burst", &id) != 0 || posix_trace_start(trid) != 0)
            _exit(4);
        for (int i = 0; i < kLossyEvents; ++i)
            posix_trace_event(id, &i, sizeof i);
        _exit(posix_trace_shutdown(trid) == 0 ? 0 : 5);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
}

// What the test knows of a log without the server: its host and stream id,
// and its events as dump --json prints them.
struct LocalLog {
    std::string path, host, stream_id;
    std::vector<std::string> events;
    uint64_t lost = 0, lost_in_kernel = 0, lost_in_stream = 0; // as its overflow events report
};

LocalLog read_local(const std::string &path)
{
    LocalLog local{path, "", "", {}};
    test_support::LogGuard log(path);
    REQUIRE(log.open_error() == 0);
    posix_trace_origin origin;
    REQUIRE(posix_trace_get_origin(log.get(), &origin) == 0);
    local.host = origin.host_name;
    uint8_t id[16];
    std::memcpy(id, origin.stream_id, 16);
    local.stream_id = posixtrace::uuid_text(id);
    Run dump = run_cli("dump --json " + path);
    REQUIRE(dump.status == 0);
    local.events = dump.lines();
    for (const auto &line : local.events)
        if (field_of(line, "event") == "posix_trace_overflow") {
            local.lost += std::stoull(field_of(line, "lost"));
            local.lost_in_kernel += std::stoull(field_of(line, "lost_in_kernel"));
            local.lost_in_stream += std::stoull(field_of(line, "lost_in_stream"));
        }
    return local;
}

// The ```sql blocks of docs/fleet.md, in order.
std::vector<std::string> fleet_queries()
{
    std::ifstream doc(std::string(POSIXTRACE_SOURCE_DIR) + "/docs/fleet.md");
    std::vector<std::string> queries;
    std::string line, query;
    bool inside = false;
    while (std::getline(doc, line)) {
        if (!inside && line == "```sql") {
            inside = true;
            query.clear();
        } else if (inside && line == "```") {
            inside = false;
            queries.push_back(query);
        } else if (inside) {
            query += line + "\n";
        }
    }
    return queries;
}

} // namespace

TEST_CASE("push: two hosts' traces in one ClickHouse answer the fleet's questions, and a second "
          "push adds nothing",
          "[push][clickhouse][self-tracing]")
{
    TempDir dir;
    record_as_host("fleet-a", dir / "a.log");
    record_as_host("fleet-b", dir / "b.log");
    record_lossy_as_host("fleet-b", dir / "b-lossy.log");
    std::vector<LocalLog> logs = {read_local(dir / "a.log"), read_local(dir / "b.log"),
                                  read_local(dir / "b-lossy.log")};
    REQUIRE(logs[0].host == "fleet-a");
    REQUIRE(logs[2].host == "fleet-b");
    REQUIRE(logs[2].lost > 0);

    ClickHouseServer server;
    Run push = run_cli("push --clickhouse " + server.url() + " " + dir / "a.log" + " " +
                       dir / "b.log" + " " + dir / "b-lossy.log");
    INFO(push.err);
    REQUIRE(push.status == 0);
    CHECK(push.err_lines() == 3);

    // Per host, as many events as the dumps.
    std::map<std::string, size_t> local_counts;
    for (const auto &log : logs)
        local_counts[log.host] += log.events.size();
    CHECK(server.answer("SELECT `host.name`, count() FROM posixtrace.events FINAL "
                        "GROUP BY `host.name` ORDER BY `host.name`") ==
          "fleet-a\t" + std::to_string(local_counts["fleet-a"]) + "\nfleet-b\t" +
              std::to_string(local_counts["fleet-b"]) + "\n");

    // One order by time across the hosts, ties by host, stream and sequence.
    using Key = std::tuple<std::string, std::string, std::string, size_t>;
    std::vector<Key> expected;
    for (const auto &log : logs)
        for (size_t i = 0; i < log.events.size(); ++i)
            expected.emplace_back(field_of(log.events[i], "ts_ns"), log.host, log.stream_id, i);
    std::sort(expected.begin(), expected.end(), [](const Key &a, const Key &b) {
        return std::make_tuple(std::stoull(std::get<0>(a)), std::get<1>(a), std::get<2>(a),
                               std::get<3>(a)) < std::make_tuple(std::stoull(std::get<0>(b)),
                                                                 std::get<1>(b), std::get<2>(b),
                                                                 std::get<3>(b));
    });
    std::string expected_text;
    for (const auto &[ns, host, stream, sequence] : expected)
        expected_text += ns + "\t" + host + "\t" + stream + "\t" + std::to_string(sequence) + "\n";
    CHECK(server.answer("SELECT time_unix_nano, `host.name`, toString(`stream.id`), sequence "
                        "FROM posixtrace.events FINAL ORDER BY time_unix_nano, `host.name`, "
                        "toString(`stream.id`), sequence") == expected_text);

    // The losses, in the streams table and before the events that followed them.
    CHECK(server.answer("SELECT `host.name`, events, lost FROM posixtrace.streams FINAL "
                        "WHERE `stream.id` = toUUID('" +
                        logs[2].stream_id + "')") ==
          "fleet-b\t" + std::to_string(logs[2].events.size()) + "\t" +
              std::to_string(logs[2].lost) + "\n");
    CHECK(server.answer("SELECT max(lost_before) FROM posixtrace.events FINAL WHERE "
                        "`stream.id` = toUUID('" +
                        logs[2].stream_id + "')") == std::to_string(logs[2].lost) + "\n");

    // A name with hostile bytes is stored as JSON would store it, in both tables.
    std::string stored_name = posixtrace::cli::valid_utf8(kLossyName);
    CHECK(server.answer("SELECT DISTINCT `stream.name` FROM posixtrace.events WHERE "
                        "`stream.id` = toUUID('" +
                        logs[2].stream_id +
                        "') UNION ALL SELECT `stream.name` FROM "
                        "posixtrace.streams WHERE `stream.id` = toUUID('" +
                        logs[2].stream_id + "')") == stored_name + "\n" + stored_name + "\n");

    // Every worker's events carry the name it gave itself (its number is their data).
    std::string works =
        server.answer("SELECT `host.name`, `thread.name`, data_hex FROM posixtrace.events FINAL "
                      "WHERE `event.name` = 'fleet.work' ORDER BY `host.name`, time_unix_nano");
    std::map<std::string, int> works_per_host;
    for (const auto &line : split_lines(works)) {
        auto fields = split(line, '\t');
        REQUIRE(fields.size() == 3);
        ++works_per_host[fields[0]];
        unsigned number = unsigned(std::stoul(fields[2].substr(0, 2), nullptr, 16));
        CHECK(fields[1] == "worker-" + std::to_string(number));
    }
    CHECK(works_per_host["fleet-a"] == kWorkers * kWorksEach);
    CHECK(works_per_host["fleet-b"] == kWorkers * kWorksEach);

    SECTION("the fleet questions of docs/fleet.md")
    {
        std::vector<std::string> queries = fleet_queries();
        REQUIRE(queries.size() == 4);
        // Contention: both hosts' workers waited for the mutex.
        auto contention = split_lines(server.answer(queries[0]));
        REQUIRE(contention.size() == 2);
        CHECK(contention[0].rfind("fleet-a\t", 0) == 0);
        CHECK(contention[1].rfind("fleet-b\t", 0) == 0);
        // Lifetimes: every worker of each host, born and dead.
        auto lifetimes = split_lines(server.answer(queries[1]));
        REQUIRE(lifetimes.size() == 2);
        CHECK(split(lifetimes[0], '\t')[0] == "fleet-a");
        CHECK(split(lifetimes[0], '\t')[1] == std::to_string(kWorkers));
        CHECK(split(lifetimes[1], '\t')[1] == std::to_string(kWorkers));
        // Losses: every stream whose overflow events report some (the lossy
        // one; a recording may lose a switch the kernel did not report), the
        // most first.
        std::vector<const LocalLog *> lossy;
        for (const auto &log : logs)
            if (log.lost)
                lossy.push_back(&log);
        std::sort(lossy.begin(), lossy.end(), [](const LocalLog *a, const LocalLog *b) {
            return std::make_pair(-int64_t(a->lost), a->stream_id) <
                   std::make_pair(-int64_t(b->lost), b->stream_id);
        });
        std::string expected_losses;
        for (const LocalLog *log : lossy)
            expected_losses += log->host + "\t" + (log == &logs[2] ? stored_name : "") + "\t" +
                               log->stream_id + "\t" + std::to_string(log->events.size()) + "\t" +
                               std::to_string(log->lost) + "\t" +
                               std::to_string(log->lost_in_kernel) + "\t" +
                               std::to_string(log->lost_in_stream) + "\n";
        CHECK(server.answer(queries[2]) == expected_losses);
        // The timeline: its first 100 events, as ordered above.
        CHECK(split_lines(server.answer(queries[3])).size() == 100);
    }
    SECTION("pushing the same logs again sends nothing and adds nothing")
    {
        std::string rows = server.answer("SELECT count() FROM posixtrace.events");
        Run again = run_cli("push --clickhouse " + server.url() + " " + dir / "a.log" + " " +
                            dir / "b.log" + " " + dir / "b-lossy.log");
        INFO(again.err);
        REQUIRE(again.status == 0);
        for (const auto &log : logs)
            CHECK(again.err.find(log.path + ": " + std::to_string(log.events.size()) +
                                 " events, 0 sent, " + std::to_string(log.events.size()) +
                                 " already there") != std::string::npos);
        CHECK(server.answer("SELECT count() FROM posixtrace.events") == rows);
    }
}

TEST_CASE("push: a server that cannot be reached is one line and a non-zero status, the log "
          "unchanged; one that comes up while push retries gets every event",
          "[push][clickhouse][self-tracing]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 2, 200);
    std::vector<unsigned char> before = file_bytes(log.path);
    ClickHouseServer server(false); // its ports are free: nobody listens yet

    Run refused = run_cli("push --clickhouse " + server.url() + " --retries 0 " + log.path);
    CHECK(refused.status != 0);
    CHECK(refused.err_lines() == 1);
    CHECK(refused.err.find("Couldn't connect to server") != std::string::npos);
    CHECK(refused.err.find("nothing was sent") != std::string::npos);
    CHECK(file_bytes(log.path) == before);

    // The push waits 0.25 + 0.5 + ... + 8 s at most; the server answers within seconds.
    pid_t pusher = fork();
    REQUIRE(pusher >= 0);
    if (pusher == 0) {
        int err = open((dir / "push.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(err, 2);
        std::string url = server.url();
        execl(cli_path().c_str(), "posixtrace", "push", "--clickhouse", url.c_str(), "--retries",
              "6", log.path.c_str(), nullptr);
        _exit(127);
    }
    server.start();
    int status = 0;
    REQUIRE(waitpid(pusher, &status, 0) == pusher);
    std::ifstream err_file(dir / "push.err");
    std::string err((std::istreambuf_iterator<char>(err_file)), {});
    INFO(err);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    Run dump = run_cli("dump " + log.path);
    CHECK(server.answer("SELECT count() FROM posixtrace.events FINAL") ==
          std::to_string(dump.lines().size()) + "\n");
}

TEST_CASE("push: bad arguments and logs it cannot key are one line and a non-zero status",
          "[push][self-tracing]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 1, 10);
    for (const std::string &arguments :
         {std::string("push " + log.path), std::string("push --clickhouse http://127.0.0.1:1"),
          std::string("push --clickhouse ftp://127.0.0.1:1 " + log.path),
          std::string("push --clickhouse http://127.0.0.1:1 " + dir / "missing.log")}) {
        Run run = run_cli(arguments);
        INFO(arguments << ": " << run.err);
        CHECK(run.status != 0);
        CHECK(run.err_lines() == 1);
    }

    // A log of a writer that kept no origin (minor version 0).
    std::vector<unsigned char> bytes = file_bytes(log.path);
    namespace format = posixtrace::log;
    format::store<uint16_t>(bytes.data() + 10, 0);
    uint32_t header_size = format::load<uint32_t>(bytes.data() + 12);
    format::store<uint32_t>(bytes.data() + header_size - 4,
                            format::crc32_of(bytes.data(), header_size - 4));
    std::ofstream(dir / "old.log", std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    ClickHouseServer server;
    Run old = run_cli("push --clickhouse " + server.url() + " " + dir / "old.log");
    CHECK(old.status != 0);
    CHECK(old.err_lines() == 1);
    CHECK(old.err.find("has no stream id") != std::string::npos);
    CHECK(server.answer("SELECT count() FROM posixtrace.events") == "0\n");
}

TEST_CASE("push: a log cut short is pushed only with --incomplete; a password never shows",
          "[push][clickhouse][self-tracing]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 1, 300);
    std::vector<unsigned char> bytes = file_bytes(log.path);
    bytes.resize(bytes.size() - 24); // the footer gone: no trailer is found
    std::ofstream(dir / "cut.log", std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    test_support::LogGuard cut(dir / "cut.log");
    REQUIRE(cut.open_error() == 0);
    posix_trace_counters counters;
    CHECK(posix_trace_get_counters(cut.get(), &counters) == ENODATA);

    ClickHouseServer server;
    Run refused = run_cli("push --clickhouse " + server.url() + " " + dir / "cut.log");
    CHECK(refused.status != 0);
    CHECK(refused.err_lines() == 1);
    CHECK(refused.err.find("--incomplete") != std::string::npos);
    CHECK(server.answer("SELECT count() FROM posixtrace.events") == "0\n");
    Run pushed = run_cli("push --incomplete --clickhouse " + server.url() + " " + dir / "cut.log");
    INFO(pushed.err);
    CHECK(pushed.status == 0);
    Run dump = run_cli("dump " + dir / "cut.log");
    CHECK(server.answer("SELECT count() FROM posixtrace.events FINAL") ==
          std::to_string(dump.lines().size()) + "\n");

    // A password reaches the server, from the URL or the environment (this
    // server's user has none: it refuses one), and never shows.
    std::string user_only = "http://default@" + server.url().substr(7);
    for (const std::string &command :
         {"push --clickhouse http://default:hunter2@" + server.url().substr(7) + " " + log.path,
          "push --clickhouse " + user_only + " " + log.path}) {
        Run run = run_shell((command.find("hunter2") == std::string::npos
                                 ? "POSIXTRACE_CLICKHOUSE_PASSWORD=hunter2 "
                                 : "") +
                            cli_path() + " " + command);
        INFO(command << ": " << run.err);
        CHECK(run.status != 0);
        CHECK(run.err.find("Wrong password") != std::string::npos);
        CHECK(run.err.find("push it again") == std::string::npos); // refused: not worth a retry
        CHECK(run.err.find("hunter2") == std::string::npos);
    }
    Run right = run_cli("push --clickhouse " + user_only + " " + log.path);
    INFO(right.err);
    CHECK(right.status == 0);
    Run failed = run_cli("push --retries 0 --clickhouse http://u:hunter2@127.0.0.1:1 " + log.path);
    CHECK(failed.status != 0);
    CHECK(failed.err.find("hunter2") == std::string::npos);
}

TEST_CASE("push: a server that answers garbage or escape sequences is one escaped line, and "
          "nothing is claimed stored",
          "[push][self-tracing]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 1, 50);
    // A misbehaving server: 200 and a fixed body to every request.
    std::ofstream(dir / "server.py") << R"(
import http.server, sys
body = bytes.fromhex(sys.argv[2])
class Answer(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', 0)))
        self.send_response(int(sys.argv[3]))
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), Answer).serve_forever()
)";
    auto hex = [](const std::string &text) {
        std::string out;
        char byte[3];
        for (unsigned char c : text) {
            std::snprintf(byte, sizeof byte, "%02x", c);
            out += byte;
        }
        return out;
    };
    struct Case {
        std::string body;
        int status;
        const char *said;
    };
    for (const Case &answer :
         {Case{"hello\x1b[2J\n", 200, "not two numbers"},
          Case{"18446744073709551615\t18446744073709551614\n", 200, "not the same stream's"},
          Case{"Code: 62, \x1b]0;owned\x07 syntax error\n", 500, "HTTP 500"}}) {
        int port = clickhouse_support::free_port();
        pid_t server = fork();
        REQUIRE(server >= 0);
        if (server == 0) {
            execl(export_support::kPython, "python3", (dir / "server.py").c_str(),
                  std::to_string(port).c_str(), hex(answer.body).c_str(),
                  std::to_string(answer.status).c_str(), nullptr);
            _exit(127);
        }
        Run run;
        for (int i = 0; i < 100; ++i) { // until it listens
            run = run_cli("push --retries 0 --clickhouse http://127.0.0.1:" + std::to_string(port) +
                          " " + log.path);
            if (run.err.find("Couldn't connect") == std::string::npos)
                break;
            usleep(100000);
        }
        kill(server, SIGTERM);
        waitpid(server, nullptr, 0);
        INFO(run.err);
        CHECK(run.status != 0);
        CHECK(run.err_lines() == 1);
        CHECK(run.err.find(answer.said) != std::string::npos);
        CHECK(run.err.find('\x1b') == std::string::npos);
        CHECK(run.err.find('\x07') == std::string::npos);
    }
}
