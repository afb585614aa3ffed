// posixtrace export --format jsonl: one JSON object a line, read back by
// Python's json module (a parser of its own, not ours), on synthetic events
// and on logs the library wrote.
#include <catch2/catch.hpp>
#include <sys/utsname.h>

#include "../userspace/cli/export/jsonl_writer.hpp"
#include "attributes/trace_origin.hpp"
#include "export_support.hpp"
#include "log_support.hpp"

using namespace export_support;
using posixtrace::cli::JsonlWriter;

namespace {

// Each line parsed as JSON and printed back as tab-separated values of the
// keys asked for (a missing key: "<none>"; a string with its backslashes,
// tabs and newlines written \\, \t and \n; anything else as JSON), or
// "BAD <line>" for a line that is not one JSON object.
const char *const kFlattenJsonl = R"(
import json, sys
keys = sys.argv[2].split(',')
for line in open(sys.argv[1], encoding='utf-8'):
    try:
        event = json.loads(line)
        assert isinstance(event, dict)
    except Exception:
        print('BAD ' + line.rstrip('\n'))
        continue
    values = []
    for key in keys:
        if key not in event:
            values.append('<none>')
        elif isinstance(event[key], str):
            values.append(event[key].replace('\\', '\\\\').replace('\t', '\\t')
                          .replace('\n', '\\n'))
        else:
            values.append(json.dumps(event[key], sort_keys=True, ensure_ascii=True))
    print('\t'.join(values))
)";

std::string file_text(const std::string &path)
{
    std::ifstream file(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

std::vector<std::vector<std::string>> read_jsonl(const std::string &path, const std::string &keys)
{
    TempDir scratch;
    std::ofstream(scratch / "flatten.py") << kFlattenJsonl;
    Run run =
        run_shell(std::string(kPython) + " " + (scratch / "flatten.py") + " " + path + " " + keys);
    INFO(run.err);
    REQUIRE(run.status == 0);
    std::vector<std::vector<std::string>> rows;
    for (const auto &line : run.lines()) {
        INFO(line);
        REQUIRE(line.rfind("BAD ", 0) != 0);
        rows.push_back(split(line, '\t'));
    }
    return rows;
}

posix_trace_origin hostile_origin()
{
    posix_trace_origin origin{};
    std::strcpy(origin.host_name, "host\t\"one\"\n\x01\xff");
    for (unsigned char i = 0; i < 16; ++i) {
        origin.boot_id[i] = i;
        origin.stream_id[i] = uint8_t(0xf0 | i);
    }
    origin.realtime_offset_ns = 1'600'000'000'000'000'000;
    return origin;
}

} // namespace

TEST_CASE("export jsonl: every line a JSON object with the host, the stream, both clocks and "
          "the event's class, fields and losses",
          "[export][jsonl]")
{
    TempDir dir;
    std::vector<Synthetic> events = scenario();
    posix_trace_overflow_data overflow{5, 2, 3};
    events.insert(events.begin() + 5, synthetic(POSIX_TRACE_OVERFLOW, "posix_trace_overflow",
                                                kBase + 4500, kPid, 0, bytes_of(overflow)));
    LogDescription description = synthetic_description();
    description.origin = hostile_origin();
    {
        JsonlWriter writer(dir / "t.jsonl", description);
        feed(writer, events);
        CHECK(writer.caveat().empty());
    }
    auto rows = read_jsonl(dir / "t.jsonl",
                           "host.name,host.boot_id,stream.id,stream.name,sequence,time_unix_nano,"
                           "time_monotonic_ns,process.pid,thread.id,thread.name,event.name,"
                           "event.class,event.id,data_hex,truncated,lost_before,fields");
    REQUIRE(rows.size() == events.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto &row = rows[i];
        INFO("line " << i);
        REQUIRE(row.size() == 17);
        CHECK(row[0] == "host\\t\"one\"\\n\x01\xc3\xbf"); // \xff read back as U+00FF
        CHECK(row[1] == "00010203-0405-0607-0809-0a0b0c0d0e0f");
        CHECK(row[2] == "f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");
        CHECK(row[3] == "synthetic \"trace\"");
        CHECK(row[4] == std::to_string(i));
        uint64_t ns = posixtrace::cli::timestamp_ns(events[i].info);
        CHECK(row[5] == std::to_string(ns));
        CHECK(row[6] == std::to_string(int64_t(ns) - 1'600'000'000'000'000'000));
        CHECK(row[7] == std::to_string(kPid));
        CHECK(row[8] == std::to_string(events[i].info.posix_tid));
        CHECK(row[10] == events[i].name);
        CHECK(row[12] == std::to_string(events[i].info.posix_event_id));
        CHECK(row[14] == "none");
        CHECK(row[15] == (i > 5 ? "5" : "0")); // losses reported before the event
    }
    auto row_of = [&](const char *name, size_t nth = 0) {
        for (size_t i = 0; i < events.size(); ++i)
            if (events[i].name == name && nth-- == 0)
                return rows[i];
        FAIL("no " << name);
        return std::vector<std::string>{};
    };
    CHECK(row_of("posix_trace_start")[11] == "system");
    CHECK(row_of("process_exec")[11] == "system");
    CHECK(row_of("td_create")[11] == "td");
    CHECK(row_of("app:request")[11] == "user");
    CHECK(row_of("python:audit")[11] == "usdt");
    CHECK(row_of("posix_trace_overflow")[16] ==
          R"({"lost": 5, "lost_in_kernel": 2, "lost_in_stream": 3})");
    CHECK(row_of("python:audit")[16] == R"({"args": [7, -1]})");
    CHECK(row_of("td_create")[16] ==
          R"({"cpu": 3, "name": "app", "new_pthread": "0x7f0000002000", "new_thread": 4001, )"
          R"("thread": 4000})");
    CHECK(row_of("process_exec")[16] == R"({"path": "/usr/bin/app"})");
    CHECK(row_of("posix_trace_start")[13] == "");
    CHECK(row_of("app:request")[13] == "2a000000");
    // A thread is named by its latest thread event, from then on.
    CHECK(row_of("posix_trace_start")[9] == "");
    CHECK(row_of("app:request")[9] == "worker");
    CHECK(row_of("td_switchto", 1)[9] == "we\"ird\xc3\xbf");
    CHECK(row_of("posix_trace_stop")[9] == "");
}

TEST_CASE("export jsonl: a log without an origin has no host or stream id, and says so",
          "[export][jsonl]")
{
    TempDir dir;
    JsonlWriter writer(dir / "t.jsonl", synthetic_description());
    feed(writer, scenario());
    CHECK(writer.caveat() == "no host or stream id (the log's writer kept none)");
    auto rows = read_jsonl(dir / "t.jsonl", "host.name,stream.id,time_monotonic_ns,stream.name");
    REQUIRE(rows.size() == scenario().size());
    for (const auto &row : rows)
        CHECK(row == std::vector<std::string>{"<none>", "<none>", "<none>", "synthetic \"trace\""});
}

TEST_CASE("export jsonl: a library-written log matches dump, with this host and the log's "
          "stream id",
          "[export][jsonl]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 2, 300);
    Run dump = run_cli("dump --json " + log.path);
    REQUIRE(dump.status == 0);
    auto lines = dump.lines();
    REQUIRE(lines.size() >= 600);

    Run run = run_cli("export " + log.path + " --format jsonl -o " + (dir / "t.jsonl"));
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(run.err_lines() == 1);
    CHECK(run.err.find("written to " + (dir / "t.jsonl")) != std::string::npos);
    auto rows =
        read_jsonl(dir / "t.jsonl", "time_unix_nano,process.pid,thread.id,event.name,data_hex,"
                                    "host.name,stream.id,stream.name,sequence");
    REQUIRE(rows.size() == lines.size());

    utsname host;
    REQUIRE(uname(&host) == 0);
    test_support::LogGuard opened(log.path);
    REQUIRE(opened.open_error() == 0);
    posix_trace_origin origin;
    REQUIRE(posix_trace_get_origin(opened.get(), &origin) == 0);
    uint8_t stream_id[16];
    std::memcpy(stream_id, origin.stream_id, 16);
    for (size_t i = 0; i < lines.size(); ++i) {
        INFO(lines[i]);
        CHECK(rows[i][0] == field_of(lines[i], "ts_ns"));
        CHECK(rows[i][1] == field_of(lines[i], "pid"));
        CHECK(rows[i][2] == field_of(lines[i], "tid"));
        CHECK(rows[i][3] == field_of(lines[i], "event"));
        CHECK(rows[i][4] == field_of(lines[i], "data_hex"));
        CHECK(rows[i][5] == host.nodename);
        CHECK(rows[i][6] == posixtrace::uuid_text(stream_id));
        CHECK(rows[i][7] == "export-test");
        CHECK(rows[i][8] == std::to_string(i));
    }

    SECTION("without -o, or with -o -, the lines go to standard output, the summary to stderr")
    {
        for (const char *output : {"", " -o -"}) {
            Run piped = run_shell(cli_path() + " export " + log.path + " --format jsonl" + output +
                                  " > " + (dir / "piped.jsonl"));
            INFO(piped.err);
            REQUIRE(piped.status == 0);
            CHECK(piped.err.find("written to standard output") != std::string::npos);
            CHECK(file_text(dir / "piped.jsonl") == file_text(dir / "t.jsonl"));
        }
    }
}

TEST_CASE("export jsonl: an output that cannot be written gives one line and a non-zero status",
          "[export][jsonl]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 1, 10);
    Run run = run_cli("export " + log.path + " --format jsonl -o " + (dir / "no/such/t.jsonl"));
    CHECK(run.status != 0);
    CHECK(run.err_lines() == 1);
    CHECK(run.err.find("No such file or directory") != std::string::npos);
    Run full = run_shell(cli_path() + " export " + log.path + " --format jsonl -o /dev/full");
    CHECK(full.status != 0);
    CHECK(full.err.find("No space left on device") != std::string::npos);
}
