// libFuzzer target for every writer of what traced processes control (event
// names, thread names, exec paths, decoded strings, payloads), checking that
// each output parses back (docs/security.md, "Every output stays well-formed
// and harmless"):
// - text (terminal_text, format_text): one line, no byte a terminal acts on,
//   and the escapes read back to the very bytes; the threads screen's
//   column (terminal_column) cut between escapes, 15 characters wide;
// - TSDL literals (c_escaped with a quote): read back to the bytes, no bare
//   quote;
// - JSON (json_string, format_json, the Chrome export): parsed by nlohmann's
//   parser, names equal to the input where it is UTF-8;
// - the HTML report: its data block parses as JSON and holds no "</", the page
//   has exactly its two script elements;
// - the rows of the jsonl export (EventRows): a JSON object a line; and
//   push's blocks of them (EventBlock): a Native block of exactly its
//   columns and rows, the texts in it the text made valid UTF-8, the payload
//   the bytes.
// `make fuzz` builds it; scripts/fuzz.sh runs it.
#include "fuzz_check.hpp"
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli/event_format.hpp"
#include "cli/export/chrome_writer.hpp"
#include "cli/export/event_rows.hpp"
#include "cli/push/event_block.hpp"
#include "cli/report/report_page.hpp"
#include "cli/report/timeline.hpp"
#include "cli/safe_text.hpp"

using namespace posixtrace::cli;

namespace {

bool is_octal(char c)
{
    return c >= '0' && c <= '7';
}

// Reads back the C escapes c_escaped writes; false on anything else.
bool unescape(const std::string &text, std::string &bytes)
{
    bytes.clear();
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') {
            bytes += text[i];
            continue;
        }
        if (++i == text.size())
            return false;
        switch (text[i]) {
        case '\\':
            bytes += '\\';
            break;
        case '"':
            bytes += '"';
            break;
        case 'n':
            bytes += '\n';
            break;
        case 't':
            bytes += '\t';
            break;
        case 'r':
            bytes += '\r';
            break;
        default: // three octal digits, \000 to \377
            if (i + 2 >= text.size() || text[i] < '0' || text[i] > '3' || !is_octal(text[i + 1]) ||
                !is_octal(text[i + 2]))
                return false;
            bytes += char(std::stoi(text.substr(i, 3), nullptr, 8));
            i += 2;
            break;
        }
    }
    return true;
}

// Every character is valid UTF-8 and none acts on a terminal.
bool shows_harmlessly(const std::string &text)
{
    for (size_t i = 0; i < text.size();) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7f)
            return false;
        size_t length = c < 0x80 ? 1 : utf8_sequence_length(text, i);
        if (!length)
            return false;
        // A character that terminal_text keeps is kept by it again.
        if (length > 1 && terminal_text(text.substr(i, length)) != text.substr(i, length))
            return false;
        i += length;
    }
    return true;
}

bool is_utf8(const std::string &text)
{
    for (size_t i = 0; i < text.size();) {
        size_t length =
            static_cast<unsigned char>(text[i]) < 0x80 ? 1 : utf8_sequence_length(text, i);
        if (!length)
            return false;
        i += length;
    }
    return true;
}

std::string file_text(const std::string &path)
{
    std::ifstream file(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), {}};
}

// The input cut in three at its first two NULs: an event name, a thread
// name (comm, at most 15 bytes) and the rest, a payload and exec path.
struct Hostile {
    std::string name, comm, payload;
    explicit Hostile(const uint8_t *data, size_t size)
    {
        std::string input(reinterpret_cast<const char *>(data), size);
        size_t first = input.find('\0');
        name = input.substr(0, first);
        if (first == std::string::npos)
            return;
        size_t second = input.find('\0', first + 1);
        comm = input.substr(first + 1, second == std::string::npos ? second : second - first - 1)
                   .substr(0, 15);
        if (second != std::string::npos)
            payload = input.substr(second + 1);
    }
};

// A user event, a USDT event with a decoded string, a thread switch and an
// exec, all carrying the hostile text.
struct Events {
    std::vector<posix_trace_event_info> infos;
    std::vector<std::string> names;
    std::vector<std::vector<unsigned char>> data;
    std::vector<bool> with_string;

    explicit Events(const Hostile &h)
    {
        auto add = [&](trace_event_id_t id, pid_t tid, std::string name,
                       std::vector<unsigned char> bytes, bool string) {
            posix_trace_event_info info{};
            info.posix_event_id = id;
            info.posix_pid = 4242;
            info.posix_tid = tid;
            info.posix_timestamp = {1'700'000'000, long(infos.size()) * 1000};
            infos.push_back(info);
            names.push_back(std::move(name));
            data.push_back(std::move(bytes));
            with_string.push_back(string);
        };
        add(POSIX_TRACE_USER_EVENT_FIRST, 4242, h.name, {h.payload.begin(), h.payload.end()},
            false);
        std::vector<unsigned char> usdt(16, 7); // two arguments, a string, its count
        usdt.insert(usdt.end(), h.payload.begin(), h.payload.end());
        usdt.push_back(0);
        usdt.push_back(2);
        add(POSIX_TRACE_USDT_EVENT_FIRST, 4242, h.name, usdt, true);
        td_event_data td{};
        td.tid = 4243;
        std::memcpy(td.name, h.comm.data(), h.comm.size());
        const auto *td_bytes = reinterpret_cast<const unsigned char *>(&td);
        add(POSIX_TRACE_TD_EVENT_FIRST + (TD_SWITCHTO - TD_MIN_EVENT_NUM), 4243, "td_switchto",
            {td_bytes, td_bytes + sizeof td}, false);
        posix_trace_process_exec_data exec{4242, 4242};
        const auto *exec_bytes = reinterpret_cast<const unsigned char *>(&exec);
        std::vector<unsigned char> exec_data(exec_bytes, exec_bytes + sizeof exec);
        exec_data.insert(exec_data.end(), h.payload.begin(), h.payload.end());
        exec_data.push_back(0);
        add(POSIX_TRACE_PROCESS_EXEC, 4242, "process_exec", exec_data, false);
    }
    size_t size() const { return infos.size(); }
    LoggedEvent logged(size_t i) const
    {
        return {infos[i], names[i], data[i].data(), data[i].size()};
    }
};

void check_escapes(const Hostile &h)
{
    for (const std::string *text : {&h.name, &h.comm, &h.payload}) {
        std::string shown = terminal_text(*text), back;
        FUZZ_CHECK(shows_harmlessly(shown));
        FUZZ_CHECK(unescape(shown, back) && back == *text);
        std::string literal = c_escaped(*text, '"');
        for (size_t at = literal.find('"'); at != std::string::npos; at = literal.find('"', at + 1))
            FUZZ_CHECK(at > 0 && literal[at - 1] == '\\');
        FUZZ_CHECK(unescape(literal, back) && back == *text);
        // A column of the threads screen: the escaped text cut between
        // escapes and characters, padded, 15 characters wide.
        std::string column = terminal_column(*text, 15);
        FUZZ_CHECK(shows_harmlessly(column));
        FUZZ_CHECK(std::count_if(column.begin(), column.end(), [](char c) {
                       return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
                   }) == 15);
        size_t kept =
            size_t(std::mismatch(column.begin(), column.end(), shown.begin(), shown.end()).first -
                   column.begin());
        FUZZ_CHECK(column.find_first_not_of(' ', kept) == std::string::npos);
        FUZZ_CHECK(unescape(column.substr(0, kept), back) &&
                   text->compare(0, back.size(), back) == 0);
        std::string json = json_string(*text);
        FUZZ_CHECK(shows_harmlessly(json));
        auto value = nlohmann::json::parse(json, nullptr, false);
        FUZZ_CHECK(!value.is_discarded() && value.is_string());
        if (is_utf8(*text))
            FUZZ_CHECK(value.get<std::string>() == *text);
    }
}

void check_event_lines(const Events &events)
{
    for (size_t i = 0; i < events.size(); ++i) {
        const auto &info = events.infos[i];
        const unsigned char *data = events.data[i].data();
        size_t length = events.data[i].size();
        std::string line = format_text(info, events.names[i], data, length, events.with_string[i]);
        FUZZ_CHECK(shows_harmlessly(line));
        auto json = nlohmann::json::parse(
            format_json(info, events.names[i], data, length, events.with_string[i]), nullptr,
            false);
        FUZZ_CHECK(!json.is_discarded() && json.is_object());
        if (is_utf8(events.names[i]))
            FUZZ_CHECK(json["event"] == events.names[i]);
    }
}

void check_chrome(const Events &events, const std::string &path)
{
    {
        ChromeWriter writer(path, LogDescription{"trace", "posixtrace", {}, 1});
        for (size_t i = 0; i < events.size(); ++i)
            writer.write(events.logged(i));
        writer.finish();
    }
    auto json = nlohmann::json::parse(file_text(path), nullptr, false);
    FUZZ_CHECK(!json.is_discarded() && json["traceEvents"].is_array());
}

void check_report(const Events &events, const std::string &path)
{
    Timeline timeline;
    for (size_t i = 0; i < events.size(); ++i)
        timeline.add(events.logged(i));
    timeline.finish();
    write_report_page(path, timeline, ReportSource{events.names[0], {}, {}, events.names[0]});
    std::string page = file_text(path);
    const std::string open = "<script type=\"application/json\" id=\"trace-data\">";
    size_t begin = page.find(open), end = page.find("</script>", begin);
    FUZZ_CHECK(begin != std::string::npos && end != std::string::npos);
    std::string block = page.substr(begin + open.size(), end - begin - open.size());
    FUZZ_CHECK(block.find_first_of("<>&") == std::string::npos);
    FUZZ_CHECK(!nlohmann::json::parse(block, nullptr, false).is_discarded());
    size_t scripts = 0;
    for (size_t at = page.find("<script"); at != std::string::npos;
         at = page.find("<script", at + 1))
        ++scripts;
    FUZZ_CHECK(scripts == 2); // no element injected by a name
}

std::vector<std::string> split_on(const std::string &text, char separator)
{
    std::vector<std::string> parts(1);
    for (char c : text)
        if (c == separator)
            parts.emplace_back();
        else
            parts.back() += c;
    return parts;
}

// A Native block read back as the server reads it: per column its name,
// type and values (each value's bytes; a String's without its length).
struct NativeColumn {
    std::string name, type;
    std::vector<std::string> values;
};

struct NativeReader {
    const std::string &bytes;
    size_t at = 0;

    uint64_t varint()
    {
        uint64_t value = 0;
        for (int shift = 0;; shift += 7) {
            FUZZ_CHECK(at < bytes.size() && shift < 64);
            uint8_t byte = uint8_t(bytes[at++]);
            value |= uint64_t(byte & 0x7f) << shift;
            if (byte < 0x80)
                return value;
        }
    }
    std::string take(uint64_t length)
    {
        FUZZ_CHECK(length <= bytes.size() - at);
        std::string value = bytes.substr(at, length);
        at += length;
        return value;
    }
    std::string string() { return take(varint()); }
};

size_t fixed_width(const std::string &type)
{
    if (type == "UUID")
        return 16;
    if (type == "UInt64" || type == "Int64")
        return 8;
    FUZZ_CHECK(type == "UInt32" || type == "Int32");
    return 4;
}

std::vector<NativeColumn> read_native(const std::string &bytes, size_t &rows)
{
    NativeReader reader{bytes};
    size_t columns = reader.varint();
    rows = reader.varint();
    std::vector<NativeColumn> read(columns);
    for (NativeColumn &column : read) {
        column.name = reader.string();
        column.type = reader.string();
        for (size_t row = 0; row < rows; ++row)
            column.values.push_back(
                column.type == "String" ? reader.string() : reader.take(fixed_width(column.type)));
    }
    FUZZ_CHECK(reader.at == bytes.size());
    return read;
}

uint64_t little_endian(const std::string &bytes)
{
    uint64_t value = 0;
    std::memcpy(&value, bytes.data(), std::min(bytes.size(), sizeof value));
    return value;
}

// The hostile text as the host's name and the stream's, the thread's (a
// td event names its thread, the event's own) and the events'.
void check_rows(const Events &events, const Hostile &h)
{
    LogDescription description{h.name, "posixtrace", {}, 1};
    posix_trace_origin origin{};
    std::memcpy(origin.host_name, h.comm.data(), h.comm.size());
    description.origin = origin;
    const size_t thread_named = 2; // the td event's index in Events
    EventRows json_rows(description, EventRows::Format::JsonObject);
    std::string out;
    for (size_t i = 0; i < events.size(); ++i)
        json_rows.append_json_row(events.logged(i), out);
    FUZZ_CHECK(!out.empty() && out.back() == '\n');
    std::vector<std::string> lines = split_on(out.substr(0, out.size() - 1), '\n');
    FUZZ_CHECK(lines.size() == events.size());
    for (size_t i = 0; i < lines.size(); ++i) {
        auto row = nlohmann::json::parse(lines[i], nullptr, false);
        FUZZ_CHECK(!row.is_discarded() && row.is_object() && row["fields"].is_object());
        FUZZ_CHECK(row["sequence"] == i);
        if (is_utf8(events.names[i]))
            FUZZ_CHECK(row["event.name"] == events.names[i]);
        if (is_utf8(h.comm)) {
            FUZZ_CHECK(row["host.name"] == h.comm);
            if (i == thread_named)
                FUZZ_CHECK(row["thread.name"] == h.comm);
        }
    }

    EventRows rows(description, EventRows::Format::Utf8Text);
    EventBlock block(description, EventBlock::Payload::Bytes);
    for (size_t i = 0; i < events.size(); ++i)
        block.append(rows.row(events.logged(i)));
    std::string bytes;
    block.finish(bytes);
    size_t read_rows = 0;
    std::vector<NativeColumn> columns = read_native(bytes, read_rows);
    FUZZ_CHECK(read_rows == events.size() && columns.size() == 19);
    FUZZ_CHECK(columns[0].name == "host.name" && columns[13].name == "data");
    for (size_t i = 0; i < read_rows; ++i) {
        FUZZ_CHECK(columns[0].values[i] == valid_utf8(h.comm));
        FUZZ_CHECK(columns[3].values[i] == valid_utf8(h.name));
        FUZZ_CHECK(little_endian(columns[4].values[i]) == i);
        FUZZ_CHECK(columns[10].values[i] == valid_utf8(events.names[i]));
        if (i == thread_named)
            FUZZ_CHECK(columns[9].values[i] == valid_utf8(h.comm));
        const LoggedEvent &event = events.logged(i);
        FUZZ_CHECK(columns[13].values[i] ==
                   std::string(reinterpret_cast<const char *>(event.data), event.length));
        auto decoded = nlohmann::json::parse(columns[16].values[i], nullptr, false);
        FUZZ_CHECK(!decoded.is_discarded() && decoded.is_object());
    }
    FUZZ_CHECK(block.rows() == 0); // emptied for the next
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const std::string dir = [] {
        char path[] = "/tmp/posixtrace-outputs-fuzzer-XXXXXX";
        FUZZ_CHECK(mkdtemp(path) != nullptr);
        static std::string made = path;
        std::atexit([] {
            unlink((made + "/chrome.json").c_str());
            unlink((made + "/report.html").c_str());
            rmdir(made.c_str());
        });
        return made;
    }();
    Hostile hostile(data, size);
    check_escapes(hostile);
    Events events(hostile);
    check_event_lines(events);
    check_chrome(events, dir + "/chrome.json");
    check_report(events, dir + "/report.html");
    check_rows(events, hostile);
    return 0;
}
