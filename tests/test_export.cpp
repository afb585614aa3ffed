// posixtrace dump and export: trace logs read back through the public API
// and converted for Perfetto / chrome://tracing (Trace Event JSON, checked by
// parsing it with Python's json module) and for babeltrace2 (CTF 1.8, checked
// by reading it with babeltrace2 itself).
//
// Two levels: the export writers fed with synthetic events (every event
// class, exact timestamps, names that need escaping), and the CLI run on
// logs the library wrote for this process.
#include "export_support.hpp"

#include <posix_trace/events.h>
#include <trace.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace export_support;

// ---- the writers, on synthetic events ---------------------------------------

TEST_CASE("export: the chrome writer makes tracks, names, slices and exact microseconds",
          "[export]")
{
    TempDir dir;
    {
        ChromeWriter writer(dir / "trace.json", synthetic_description());
        feed(writer, scenario());
    }
    ChromeTrace trace = read_chrome(dir / "trace.json");
    INFO(trace.error);
    REQUIRE(trace.status == 0);
    CHECK(trace.display_time_unit == "ns");
    CHECK(trace.first_event_time_ns == std::to_string(kBase));
    CHECK(trace.trace_name == "synthetic \"trace\"");

    auto instants = trace.with_phase("i");
    auto events = scenario();
    REQUIRE(instants.size() == events.size());
    for (size_t i = 0; i < events.size(); ++i) {
        INFO(i);
        CHECK(instants[i].name == events[i].name);
        CHECK(instants[i].pid == std::to_string(kPid));
        CHECK(instants[i].tid == std::to_string(events[i].info.posix_tid));
        CHECK(instants[i].ts ==
              microseconds_text(posixtrace::cli::timestamp_ns(events[i].info), kBase));
        CHECK(instants[i].scope == (events[i].info.posix_tid ? "t" : "p"));
    }
    CHECK(instants[3].ts == "3.500");
    CHECK(instants[5].ts == "5.001");
    CHECK(instants[4].data_hex == "2a000000"); // a user event's data
    CHECK(instants[5].usdt_args == "[7, -1]"); // a USDT event's arguments

    // td_switchto .. td_switchfrom, then a slice the end of the log cuts.
    auto begins = trace.with_phase("B");
    auto ends = trace.with_phase("E");
    REQUIRE(begins.size() == 2);
    REQUIRE(ends.size() == 2);
    CHECK(begins[0].name == "running");
    CHECK(begins[0].tid == std::to_string(kWorker));
    CHECK(begins[0].ts == "3.500");
    CHECK(ends[0].ts == "6.000");
    CHECK(begins[1].ts == "7.000");
    CHECK(ends[1].ts == "8.000");

    std::map<std::string, std::string> names; // "kind pid tid" -> name
    for (const auto &event : trace.with_phase("M"))
        names[event.name + " " + event.pid + " " + event.tid] = event.label;
    CHECK(names.size() == 3); // one process, two threads (none for tid 0)
    CHECK(names["process_name 4000 0"] == "/usr/bin/app");
    CHECK(names["thread_name 4000 4000"] == "app");
    CHECK(names["thread_name 4000 4001"] == "we\"ird\u00ff"); // latest comm, Latin-1 byte
}

TEST_CASE("export: the chrome writer without events, and with processes traced before exec",
          "[export]")
{
    TempDir dir;
    SECTION("no event: valid JSON all the same")
    {
        {
            ChromeWriter writer(dir / "empty.json", LogDescription{});
            writer.finish();
        }
        ChromeTrace trace = read_chrome(dir / "empty.json");
        INFO(trace.error);
        REQUIRE(trace.status == 0);
        CHECK(trace.events.empty());
        CHECK(trace.first_event_time_ns == "None");
    }
    SECTION("a process without process_exec is named after its main thread, else its pid")
    {
        {
            ChromeWriter writer(dir / "t.json", LogDescription{});
            feed(writer, {synthetic(td_id(TD_CREATE), "td_create", kBase, kPid, kPid,
                                    td_data(kPid, "server", kWorker)),
                          synthetic(32, "app:request", kBase + 1, 5000, 5001)});
        }
        ChromeTrace trace = read_chrome(dir / "t.json");
        INFO(trace.error);
        REQUIRE(trace.status == 0);
        std::map<std::string, std::string> names;
        for (const auto &event : trace.with_phase("M"))
            names[event.name + " " + event.pid + " " + event.tid] = event.label;
        CHECK(names["process_name 4000 0"] == "server");
        CHECK(names["process_name 5000 0"] == "pid 5000");
        CHECK(names["thread_name 5000 5001"] == "tid 5001");
    }
}

TEST_CASE("export: babeltrace2 reads the CTF writer's trace with names, ids and fields", "[export]")
{
    TempDir dir;
    {
        CtfWriter writer(dir / "ctf", synthetic_description());
        feed(writer, scenario());
    }
    std::ifstream metadata(dir / "ctf/metadata");
    std::string first_line;
    std::getline(metadata, first_line);
    CHECK(first_line == "/* CTF 1.8 */");

    Run run = read_ctf(dir / "ctf");
    INFO(run.err);
    REQUIRE(run.status == 0);
    auto lines = run.lines();
    auto events = scenario();
    REQUIRE(lines.size() == events.size());
    for (size_t i = 0; i < events.size(); ++i) {
        INFO(lines[i]);
        CHECK(lines[i].find(seconds_text(posixtrace::cli::timestamp_ns(events[i].info))) == 0);
        CHECK(lines[i].find(" " + events[i].name + ": ") != std::string::npos);
        CHECK(lines[i].find("pid = 4000, tid = " + std::to_string(events[i].info.posix_tid)) !=
              std::string::npos);
    }
    INFO(run.out);
    CHECK(lines[1].find("path = \"/usr/bin/app\"") != std::string::npos);
    CHECK(lines[2].find("thread = 4000, cpu = 3, pthread_id = 0x7F0000001000, new_thread = 4001, "
                        "new_pthread = 0x7F0000002000, name = \"app\"") != std::string::npos);
    CHECK(lines[4].find("data_length = 4, data = [ [0] = 42, [1] = 0, [2] = 0, [3] = 0 ]") !=
          std::string::npos);
    CHECK(lines[5].find("args_count = 2, args = [ [0] = 7, [1] = -1 ]") != std::string::npos);
    CHECK(lines[6].find("state = 1, next = 4000, name = \"worker\"") != std::string::npos);
    CHECK(lines[8].find("cause = 0") != std::string::npos);
}

TEST_CASE("export: babeltrace2 reads back a CTF event name whose control byte precedes a digit",
          "[export][security]")
{
    // A \xHH escape would swallow the hex digits after it ("\x01abc" is one
    // byte to a C or TSDL lexer).
    const std::vector<std::string> names = {std::string("\x01") + "abc",
                                            std::string("\x1b") + "1fix:7"};
    TempDir dir;
    {
        CtfWriter writer(dir / "ctf", LogDescription{});
        feed(writer, {synthetic(32, names[0], kBase, kPid, kPid),
                      synthetic(33, names[1], kBase + 1, kPid, kPid)});
    }
    Run run = read_ctf(dir / "ctf");
    INFO(run.err);
    REQUIRE(run.status == 0);
    auto lines = run.lines();
    REQUIRE(lines.size() == names.size());
    for (size_t i = 0; i < names.size(); ++i) {
        INFO(lines[i]);
        CHECK(lines[i].find(" " + names[i] + ": {") != std::string::npos);
    }
}

TEST_CASE("export: CTF traces of many packets, of no event, and an output directory in use",
          "[export]")
{
    TempDir dir;
    SECTION("events spread over many 64 KiB packets all read back, in order")
    {
        std::vector<Synthetic> events;
        for (uint32_t i = 0; i < 20000; ++i) {
            std::vector<unsigned char> data(100, uint8_t(i));
            std::memcpy(data.data(), &i, sizeof i);
            events.push_back(synthetic(33, "app:bulk", kBase + i * 10, kPid, kPid, data));
        }
        {
            CtfWriter writer(dir / "ctf", LogDescription{});
            feed(writer, events);
        }
        CHECK(fs::file_size(dir / "ctf/stream") > 30 * 65536);
        Run run = read_ctf(dir / "ctf");
        INFO(run.err);
        REQUIRE(run.status == 0);
        auto lines = run.lines();
        REQUIRE(lines.size() == events.size());
        CHECK(lines[19999].find(seconds_text(kBase + 199990)) == 0);
        CHECK(lines[19999].find("[0] = 31, [1] = 78, [2] = 0, [3] = 0, [4] = 31") !=
              std::string::npos); // 19999 = 0x4e1f
    }
    SECTION("no event: metadata and an empty stream that babeltrace2 accepts")
    {
        {
            CtfWriter writer(dir / "ctf", LogDescription{});
            writer.finish();
        }
        Run run = read_ctf(dir / "ctf");
        INFO(run.err);
        CHECK(run.status == 0);
        CHECK(run.out.empty());
    }
    SECTION("events out of timestamp order: sorted within a window, else restamped")
    {
        std::vector<Synthetic> events = {
            synthetic(33, "app:late", kBase + 10, kPid, kPid),
            synthetic(34, "app:early", kBase + 5, kPid, kPid),
        };
        for (uint32_t i = 0; i < 16400; ++i)
            events.push_back(synthetic(35, "app:bulk", kBase + 1000 + i, kPid, kPid));
        events.push_back(synthetic(36, "app:far", kBase + 7, kPid, kPid)); // behind the window
        CtfWriter writer(dir / "ctf", LogDescription{});
        feed(writer, events);
        CHECK(writer.caveat().find("1 events far out of timestamp order") == 0);
        Run run = read_ctf(dir / "ctf");
        INFO(run.err);
        REQUIRE(run.status == 0);
        auto lines = run.lines();
        REQUIRE(lines.size() == events.size());
        CHECK(lines[0].find(seconds_text(kBase + 5)) == 0);
        CHECK(lines[0].find(" app:early:") != std::string::npos);
        CHECK(lines[1].find(" app:late:") != std::string::npos);
        auto far = std::find_if(lines.begin(), lines.end(), [](const std::string &line) {
            return line.find(" app:far:") != std::string::npos;
        });
        REQUIRE(far != lines.end());
        REQUIRE(far != lines.begin());
        CHECK(far->substr(0, 22) == std::prev(far)->substr(0, 22)); // the time before it
    }
    SECTION("event type names that need quoting in the metadata")
    {
        std::vector<Synthetic> events = {
            synthetic(33, "app:\"quoted\"\\back", kBase, kPid, kPid),
            synthetic(34, "caf\u00e9:tab\there", kBase + 1, kPid, kPid),
        };
        {
            CtfWriter writer(dir / "ctf", LogDescription{});
            feed(writer, events);
        }
        Run run = read_ctf(dir / "ctf");
        INFO(run.err);
        REQUIRE(run.status == 0);
        auto lines = run.lines();
        REQUIRE(lines.size() == 2);
        CHECK(lines[0].find(" app:\"quoted\"\\back: ") != std::string::npos);
        CHECK(lines[1].find(" caf\u00e9:tab\there: ") != std::string::npos);
    }
    SECTION("an earlier export is replaced; a directory holding other files is refused")
    {
        for (int round = 0; round < 2; ++round) {
            CtfWriter writer(dir / "ctf", LogDescription{});
            feed(writer, scenario());
        }
        CHECK(read_ctf(dir / "ctf").lines().size() == scenario().size());
        std::ofstream(dir / "ctf/notes.txt") << "mine\n";
        CHECK_THROWS_WITH(CtfWriter(dir / "ctf", LogDescription{}),
                          Catch::Contains("not empty (holds notes.txt)"));
    }
}

// ---- the CLI, on logs the library wrote -------------------------------------

TEST_CASE("export: dump prints every event of a log, as text and as JSON", "[export]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 2, 500);

    Run json = run_cli("dump --json " + log.path);
    INFO(json.err);
    REQUIRE(json.status == 0);
    CHECK(json.err_lines() == 1); // the summary
    auto lines = json.lines();
    std::map<std::string, uint32_t> next_sequence; // tid -> expected
    size_t requests = 0;
    for (const auto &line : lines) {
        CHECK(field_of(line, "pid") == std::to_string(getpid()));
        if (field_of(line, "event") != "app:request")
            continue;
        ++requests;
        std::string tid = field_of(line, "tid");
        auto thread = std::find(log.tids.begin(), log.tids.end(), std::stoi(tid));
        REQUIRE(thread != log.tids.end());
        uint32_t index = uint32_t(thread - log.tids.begin());
        CHECK(field_of(line, "data_hex") == hex_of(index, next_sequence[tid]++));
        CHECK(field_of(line, "truncated") == "none");
    }
    CHECK(requests == 2 * log.per_thread);
    CHECK(json.err.find(std::to_string(lines.size()) + " events, 0 lost") != std::string::npos);

    Run text = run_cli("dump " + log.path);
    CHECK(text.status == 0);
    CHECK(text.lines().size() == lines.size());
}

TEST_CASE("export: a library-written log exported to chrome and ctf matches dump", "[export]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 2, 300);
    Run dump = run_cli("dump --json " + log.path);
    REQUIRE(dump.status == 0);
    auto lines = dump.lines();
    REQUIRE(lines.size() >= 600);
    uint64_t origin = std::stoull(field_of(lines[0], "ts_ns"));

    SECTION("chrome: one instant per event, microseconds since the first, a track per thread")
    {
        Run run = run_cli("export " + log.path + " --format chrome -o " + (dir / "t.json"));
        INFO(run.err);
        REQUIRE(run.status == 0);
        CHECK(run.err_lines() == 1);
        ChromeTrace trace = read_chrome(dir / "t.json");
        INFO(trace.error);
        REQUIRE(trace.status == 0);
        CHECK(trace.trace_name == "export-test");
        CHECK(trace.first_event_time_ns == std::to_string(origin));
        auto instants = trace.with_phase("i");
        REQUIRE(instants.size() == lines.size());
        for (size_t i = 0; i < lines.size(); ++i) {
            INFO(lines[i]);
            CHECK(instants[i].name == field_of(lines[i], "event"));
            CHECK(instants[i].tid == field_of(lines[i], "tid"));
            CHECK(instants[i].ts ==
                  microseconds_text(std::stoull(field_of(lines[i], "ts_ns")), origin));
            CHECK(instants[i].data_hex == field_of(lines[i], "data_hex"));
        }
        std::map<std::string, std::string> thread_names;
        for (const auto &event : trace.with_phase("M"))
            if (event.name == "thread_name")
                thread_names[event.tid] = event.label;
        for (pid_t tid : log.tids)
            CHECK(thread_names[std::to_string(tid)] == "tid " + std::to_string(tid));
    }
    SECTION("ctf: babeltrace2 lists the same events, stamps, pids, tids and data")
    {
        Run run = run_cli("export " + log.path + " --format ctf -o " + (dir / "ctf"));
        INFO(run.err);
        REQUIRE(run.status == 0);
        Run ctf = read_ctf(dir / "ctf");
        INFO(ctf.err);
        REQUIRE(ctf.status == 0);
        auto read = ctf.lines();
        REQUIRE(read.size() == lines.size());
        for (size_t i = 0; i < lines.size(); ++i) {
            INFO(read[i]);
            CHECK(read[i].find(seconds_text(std::stoull(field_of(lines[i], "ts_ns")))) == 0);
            CHECK(read[i].find(" " + field_of(lines[i], "event") + ": ") != std::string::npos);
            CHECK(read[i].find("pid = " + field_of(lines[i], "pid") +
                               ", tid = " + field_of(lines[i], "tid")) != std::string::npos);
            if (field_of(lines[i], "event") == "app:request")
                CHECK(read[i].find("data_length = 8, data = [ [0] = ") != std::string::npos);
        }
    }
}

TEST_CASE("export: a damaged block stops dump and export with one line after the events before",
          "[export]")
{
    TempDir dir;
    EmittedLog log = write_log(dir, 1, 20000);
    Run whole = run_cli("dump " + log.path);
    REQUIRE(whole.status == 0);
    size_t all_events = whole.lines().size();

    // docs/log-format.md: the header says where block 0 starts; damage the
    // payload of the last block (one byte, so only its CRC can tell).
    std::fstream file(log.path, std::ios::in | std::ios::out | std::ios::binary);
    auto read_at = [&](uint64_t offset, void *into, size_t size) {
        file.seekg(std::streamoff(offset));
        file.read(static_cast<char *>(into), std::streamsize(size));
        return bool(file);
    };
    uint64_t block = 0, last_block = 0;
    REQUIRE(read_at(16, &block, 8));
    uint64_t file_size = fs::file_size(log.path);
    for (;;) {
        char magic[4];
        uint32_t payload = 0;
        if (block + 40 > file_size || !read_at(block, magic, 4) || std::memcmp(magic, "PTBK", 4))
            break;
        REQUIRE(read_at(block + 16, &payload, 4));
        last_block = block;
        block += 40 + payload;
    }
    file.clear();
    REQUIRE(last_block != 0);
    char byte;
    REQUIRE(read_at(last_block + 40 + 20, &byte, 1));
    byte = char(byte ^ 0x55);
    file.seekp(std::streamoff(last_block + 40 + 20));
    file.write(&byte, 1);
    file.close();

    Run dump = run_cli("dump " + log.path);
    CHECK(dump.status != 0);
    CHECK(dump.lines().size() < all_events);
    CHECK(dump.err_lines() == 1);
    CHECK(dump.err.find("posixtrace: " + log.path + ": the log is damaged after " +
                        std::to_string(dump.lines().size()) + " events") == 0);

    Run exported = run_cli("export " + log.path + " --format chrome -o " + (dir / "t.json"));
    CHECK(exported.status != 0);
    CHECK(exported.err_lines() == 1);
    ChromeTrace trace = read_chrome(dir / "t.json"); // what was read is still a valid file
    CHECK(trace.status == 0);
    CHECK(trace.with_phase("i").size() == dump.lines().size());
}

TEST_CASE("export: bad input gives one line on stderr and a non-zero status", "[export]")
{
    TempDir dir;
    std::ofstream(dir / "not-a-log") << "hello, I am not a trace log\n";
    struct Case {
        std::string arguments;
        std::string message;
    } cases[] = {
        {"dump " + (dir / "missing"),
         "posixtrace: " + (dir / "missing") + ": No such file or directory"},
        {"dump " + (dir / "not-a-log"), "not a trace log"},
        {"dump " + (dir / ""), "Is a directory"},
        {"dump", "give the trace log"},
        {"export " + (dir / "missing") + " --format chrome -o " + (dir / "x.json"),
         "No such file or directory"},
        {"export " + (dir / "not-a-log") + " --format ctf -o " + (dir / "ctf"), "not a trace log"},
        {"export " + (dir / "not-a-log") + " --format svg -o " + (dir / "x"),
         "unknown format 'svg'"},
        {"export " + (dir / "not-a-log") + " --format chrome", "give -o OUT"},
        {"export " + (dir / "not-a-log") + " -o " + (dir / "x"), "give --format"},
    };
    for (const auto &c : cases) {
        INFO(c.arguments);
        Run run = run_cli(c.arguments);
        INFO(run.err);
        CHECK(run.status != 0);
        CHECK(run.err.find(c.message) != std::string::npos);
        CHECK(run.err_lines() == 1);
    }
}
