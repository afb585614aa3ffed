// posixtrace report: the page of a real recording, rendered by a real
// browser (headless chromium: its DOM and a screenshot), a damaged log, and
// the aggregation that keeps the page of a big log small.
#include <catch2/catch.hpp>
#include <posix_trace/thread_db.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "../userspace/cli/report/report_page.hpp"
#include "../userspace/cli/report/timeline.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"

using namespace cli_support;
using namespace test_support;
using posixtrace::cli::LaneState;
using posixtrace::cli::LoggedEvent;
using posixtrace::cli::ReportSource;
using posixtrace::cli::Timeline;
using posixtrace::cli::TimelineLimits;

namespace {

std::string file_text(const std::string &path)
{
    std::ifstream file(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), {}};
}

const char *kChromium = "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                        "--no-first-run --user-data-dir=/tmp/posixtrace-chromium";

// The number of pixels of a PNG (8-bit RGB or RGBA, as chromium writes
// them) that differ from its first pixel: 0 for a blank image.
size_t pixels_unlike_first(const std::string &png)
{
    REQUIRE(png.size() > 33);
    REQUIRE(png.compare(1, 3, "PNG") == 0);
    auto be32 = [&](size_t at) {
        return uint32_t(uint8_t(png[at])) << 24 | uint32_t(uint8_t(png[at + 1])) << 16 |
               uint32_t(uint8_t(png[at + 2])) << 8 | uint32_t(uint8_t(png[at + 3]));
    };
    uint32_t width = be32(16), height = be32(20);
    int color_type = uint8_t(png[25]);
    REQUIRE(uint8_t(png[24]) == 8);
    REQUIRE((color_type == 2 || color_type == 6));
    size_t channels = color_type == 6 ? 4 : 3;
    std::string compressed;
    for (size_t at = 8; at + 8 <= png.size();) {
        uint32_t length = be32(at);
        if (png.compare(at + 4, 4, "IDAT") == 0)
            compressed += png.substr(at + 8, length);
        at += 12 + length;
    }
    size_t stride = width * channels;
    std::vector<uint8_t> raw((stride + 1) * height);
    uLongf raw_size = raw.size();
    REQUIRE(uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef *>(compressed.data()),
                       compressed.size()) == Z_OK);
    std::vector<uint8_t> previous(stride, 0), row(stride);
    size_t unlike = 0;
    uint8_t first[4] = {};
    for (uint32_t y = 0; y < height; ++y) {
        const uint8_t *line = raw.data() + y * (stride + 1);
        int filter = line[0];
        for (size_t x = 0; x < stride; ++x) { // undo the row's PNG filter
            int a = x >= channels ? row[x - channels] : 0, b = previous[x];
            int c = x >= channels ? previous[x - channels] : 0, p = a + b - c;
            int predictor =
                filter == 1   ? a
                : filter == 2 ? b
                : filter == 3 ? (a + b) / 2
                : filter == 4
                    ? (std::abs(p - a) <= std::abs(p - b) && std::abs(p - a) <= std::abs(p - c) ? a
                       : std::abs(p - b) <= std::abs(p - c)                                     ? b
                                                                                                : c)
                    : 0;
            row[x] = uint8_t(line[1 + x] + predictor);
        }
        for (size_t x = 0; x < width; ++x) {
            if (y == 0 && x == 0)
                std::memcpy(first, row.data(), channels);
            unlike += std::memcmp(first, row.data() + x * channels, 3) != 0;
        }
        previous = row;
    }
    return unlike;
}

} // namespace

TEST_CASE("report: a lane per named thread with its markers, drawn in a real browser",
          "[report][cli]")
{
    std::string log = temp_path("report-log"), page = log + ".html", shot = log + ".png";
    Run record =
        run_cli("record --events user,td,system -o " + log + " -- " + helper_path("named_threads"));
    REQUIRE(record.status == 0);
    Run report = run_cli("report " + log);
    REQUIRE(report.status == 0);
    std::string html = file_text(page);
    CHECK(html.find("http://") == std::string::npos); // no network resource
    CHECK(html.find("https://") == std::string::npos);

    Run dom = run_shell(std::string(kChromium) + " --dump-dom file://" + page);
    REQUIRE(dom.status == 0);
    CHECK(dom.out.find("data-rendered=\"yes\"") != std::string::npos);
    std::smatch painted;
    REQUIRE(std::regex_search(dom.out, painted, std::regex("data-painted-pixels=\"(\\d+)\"")));
    CHECK(std::stoul(painted[1]) > 1000);
    for (int i = 0; i < 20; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "worker-%02d", i);
        INFO(name);
        std::regex lane("<div class=\"lane\" data-tid=\"\\d+\" data-markers=\"(\\d+)\"[^>]*>" +
                        std::string(name) + " \\d+</div>");
        std::smatch found;
        REQUIRE(std::regex_search(dom.out, found, lane));
        CHECK(found[1] == "3"); // its three report.tick events
    }

    Run screenshot = run_shell(std::string(kChromium) +
                               " --window-size=1200,800 --screenshot=" + shot + " file://" + page);
    REQUIRE(screenshot.status == 0);
    CHECK(pixels_unlike_first(file_text(shot)) > 20000);
    for (const std::string &path : {log, page, shot})
        unlink(path.c_str());
}

TEST_CASE("report: a damaged log gives the page of what was read, a note, and a failure",
          "[report][cli]")
{
    std::string log = temp_path("report-damaged"), page = log + ".html";
    REQUIRE(
        run_cli("record --events user,td,system -o " + log + " -- " + helper_path("named_threads"))
            .status == 0);
    std::string bytes = file_text(log);
    REQUIRE(bytes.size() > 4096);
    bytes[bytes.size() / 2] ^= 0x5a; // inside a block: its checksum no longer matches
    std::ofstream(log, std::ios::binary | std::ios::trunc) << bytes;
    Run report = run_cli("report " + log + " -o " + page);
    CHECK(report.status != 0);
    CHECK(report.err_lines() == 1);
    CHECK(file_text(page).find("id=\"damage\"") != std::string::npos);
    unlink(log.c_str());
    unlink(page.c_str());
}

TEST_CASE("report: past its limits the timeline aggregates, and says so", "[report]")
{
    TimelineLimits limits;
    limits.spans_per_lane = 100;
    limits.markers = 50;
    limits.buckets = 20;
    Timeline timeline(limits);
    std::string switch_name = "td_switchto", user_name = "busy.tick";
    auto feed = [&](trace_event_id_t id, const std::string &name, uint64_t ns, const void *data,
                    size_t length) {
        posix_trace_event_info info{};
        info.posix_event_id = id;
        info.posix_pid = 100;
        info.posix_tid = 100;
        info.posix_timestamp = {time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
        timeline.add(LoggedEvent{info, name, static_cast<const unsigned char *>(data), length});
    };
    td_event_data td{};
    td.tid = 100;
    std::memcpy(td.name, "busy", 5);
    for (uint64_t i = 0; i < 1000; ++i) { // 1000 switches in and out, 1 us apart
        bool in = i % 2 == 0;
        td.value = in ? 0 : 1;
        feed(POSIX_TRACE_TD_EVENT_ID(in ? TD_SWITCHTO : TD_SWITCHFROM),
             in ? switch_name : "td_switchfrom", 1'000'000'000 + i * 1000, &td, sizeof td);
        int number = int(i);
        feed(POSIX_TRACE_USER_EVENT_FIRST, user_name, 1'000'000'000 + i * 1000 + 500, &number,
             sizeof number);
    }
    timeline.finish();
    const auto &lane = timeline.lanes().at(100);
    CHECK(lane.name == "busy");
    CHECK(lane.spans.size() <= limits.buckets);
    REQUIRE(!lane.spans.empty());
    for (const auto &span : lane.spans)
        CHECK((span.state == LaneState::running || span.state == LaneState::runnable));
    REQUIRE(lane.marker_density.size() == limits.buckets);
    uint64_t total = 0;
    for (uint32_t count : lane.marker_density)
        total += count;
    CHECK(total == 1000); // every marker counted, the first 50 and the rest
    CHECK(timeline.details().empty());
    CHECK(timeline.aggregation_note().find("state they were in most") != std::string::npos);
    CHECK(timeline.aggregation_note().find("More than 50 events") != std::string::npos);
}

// Found by the outputs fuzzer: "<!--" then "<script" in the data block puts
// the HTML parser in its double-escaped state, where the page's </script>
// no longer closes the block. Names a traced process chose must stay data.
TEST_CASE("report: names that spell HTML stay text in the page", "[report][security]")
{
    const std::string event_name = "<!--<script>x.y</script>&amp;";
    const char thread_name[] = "</script><b>";
    Timeline timeline;
    posix_trace_event_info info{};
    info.posix_pid = 100;
    info.posix_tid = 100;
    info.posix_timestamp = {1, 0};
    td_event_data td{};
    td.tid = 100;
    std::memcpy(td.name, thread_name, sizeof thread_name);
    info.posix_event_id = POSIX_TRACE_TD_EVENT_ID(TD_SWITCHTO);
    const std::string switch_name = "td_switchto";
    timeline.add(
        LoggedEvent{info, switch_name, reinterpret_cast<const unsigned char *>(&td), sizeof td});
    info.posix_event_id = POSIX_TRACE_USER_EVENT_FIRST;
    info.posix_timestamp = {1, 500};
    timeline.add(LoggedEvent{info, event_name, nullptr, 0});
    timeline.finish();
    std::string page_path = temp_path("report-names") + ".html";
    write_report_page(page_path, timeline, ReportSource{event_name, {}, {}, event_name});
    std::string page = file_text(page_path);
    unlink(page_path.c_str());
    INFO(page.substr(0, 4000));
    const std::string open = "<script type=\"application/json\" id=\"trace-data\">";
    size_t begin = page.find(open);
    REQUIRE(begin != std::string::npos);
    begin += open.size();
    size_t end = page.find("</script>", begin);
    REQUIRE(end != std::string::npos);
    std::string block = page.substr(begin, end - begin);
    CHECK(block.find_first_of("<>&") == std::string::npos);
    CHECK(block.find(R"(\u003c!--\u003cscript\u003ex.y\u003c/script\u003e\u0026amp;)") !=
          std::string::npos);
    CHECK(block.find(R"(\u003c/script\u003e\u003cb\u003e)") != std::string::npos);
    int scripts = 0;
    for (size_t at = page.find("<script"); at != std::string::npos;
         at = page.find("<script", at + 1))
        ++scripts;
    CHECK(scripts == 2); // the data block and the page's own script, nothing a name made
    CHECK(page.find("<td>&lt;/script&gt;&lt;b&gt;</td>") != std::string::npos); // threads table
}
