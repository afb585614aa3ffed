// How push keeps an event's payload in ClickHouse (Debian's server, started
// by the test): as its bytes in a table of today's schema, read back as
// data_hex; as text in a table an earlier version made; and JSON rows
// inserted by hand through posixtrace.events_jsonl.
#include <catch2/catch.hpp>

#include <cstring>

#include "../userspace/cli/safe_text.hpp"
#include "attributes/trace_origin.hpp"
#include "clickhouse_support.hpp"
#include "export_support.hpp"
#include "log_support.hpp"

using namespace export_support;
using clickhouse_support::ClickHouseServer;

namespace {

std::string stream_id_of(const std::string &path)
{
    test_support::LogGuard log(path);
    REQUIRE(log.open_error() == 0);
    posix_trace_origin origin;
    REQUIRE(posix_trace_get_origin(log.get(), &origin) == 0);
    uint8_t id[16];
    std::memcpy(id, origin.stream_id, 16);
    return posixtrace::uuid_text(id);
}

// Each event's stamp, ids, name, payload and truncation, a line an event
// in the log's order: as dump --json prints them, and as the server holds them.
std::string dumped_rows(const std::string &path)
{
    Run dump = run_cli("dump --json " + path);
    REQUIRE(dump.status == 0);
    std::string rows;
    for (const std::string &line : dump.lines())
        for (const char *key : {"ts_ns", "pid", "tid", "event", "data_hex", "truncated"})
            rows += field_of(line, key) + (std::strcmp(key, "truncated") ? "\t" : "\n");
    return rows;
}

std::string stored_rows(const ClickHouseServer &server, const std::string &stream_id)
{
    return server.answer("SELECT time_unix_nano, `process.pid`, `thread.id`, `event.name`, "
                         "data_hex, truncated FROM posixtrace.events FINAL WHERE `stream.id` = "
                         "toUUID('" +
                         stream_id + "') ORDER BY sequence");
}

std::string column_kind(const ClickHouseServer &server, const std::string &name)
{
    return server.answer("SELECT default_kind FROM system.columns WHERE database = 'posixtrace' "
                         "AND table = 'events' AND name = '" +
                         name + "'");
}

// A jsonl line with its `fields` object as JSON text, which 18.16 reads
// into a String column (the object it does not).
std::string with_fields_as_text(const std::string &line)
{
    size_t at = line.rfind(",\"fields\":");
    REQUIRE(at != std::string::npos);
    size_t object = at + std::strlen(",\"fields\":");
    REQUIRE(line.size() > object + 1);
    REQUIRE(line.back() == '}');
    return line.substr(0, object) +
           posixtrace::cli::json_string(line.substr(object, line.size() - 1 - object)) + "}";
}

} // namespace

TEST_CASE("push: the payload is kept as its bytes and read back as the dump's data_hex; jsonl "
          "rows by hand go in through events_jsonl",
          "[push][clickhouse][self-tracing]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 2, 300);
    ClickHouseServer server;
    Run push = run_cli("push --clickhouse " + server.url() + " " + log.path);
    INFO(push.err);
    REQUIRE(push.status == 0);
    CHECK(column_kind(server, "data") == "\n");
    CHECK(column_kind(server, "data_hex") == "ALIAS\n");
    std::string dumped = dumped_rows(log.path);
    CHECK(std::count(dumped.begin(), dumped.end(), '\n') >= 600);
    CHECK(stored_rows(server, stream_id_of(log.path)) == dumped);

    SECTION("export --format jsonl inserted by hand: the same rows")
    {
        TempDir other_dir;
        EmittedLog other = write_log(other_dir, 1, 50);
        Run exported = run_cli("export " + other.path + " --format jsonl -o " + dir / "o.jsonl");
        REQUIRE(exported.status == 0);
        std::ifstream jsonl(dir / "o.jsonl");
        std::ofstream rows(dir / "rows.json");
        for (std::string line; std::getline(jsonl, line);)
            rows << with_fields_as_text(line) << "\n";
        rows.close();
        Run insert = server.insert("INSERT INTO posixtrace.events_jsonl FORMAT JSONEachRow",
                                   dir / "rows.json");
        INFO(insert.err);
        REQUIRE(insert.status == 0);
        CHECK(stored_rows(server, stream_id_of(other.path)) == dumped_rows(other.path));
    }
}

TEST_CASE("push: a table the first release made keeps its payload as text and gains the "
          "columns added since",
          "[push][clickhouse][self-tracing]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 2, 300);
    ClickHouseServer server;
    server.answer(clickhouse_support::kFirstReleaseEventsTable);
    Run push = run_cli("push --clickhouse " + server.url() + " " + log.path);
    INFO(push.err);
    REQUIRE(push.status == 0);
    CHECK(column_kind(server, "data_hex") == "\n");
    CHECK(column_kind(server, "data").empty());
    CHECK(column_kind(server, "process.vpid") == "DEFAULT\n");
    CHECK(stored_rows(server, stream_id_of(log.path)) == dumped_rows(log.path));
}
