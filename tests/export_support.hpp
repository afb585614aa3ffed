// What the export tests share: running programs, temporary directories,
// reading a Chrome trace and a CTF trace back, synthetic events of every
// class, and trace logs this process writes through the library.
#pragma once
#include "cli_support.hpp"
#include "test_support.hpp"

#include <fcntl.h>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// The writers are CLI code: the test binary links the CLI's objects.
#include "../userspace/cli/export/chrome_writer.hpp"
#include "../userspace/cli/export/ctf_writer.hpp"
#include "../userspace/cli/export/output_file.hpp"
#include "../userspace/cli/logged_event.hpp"

using posixtrace::cli::ChromeWriter;
using posixtrace::cli::CtfWriter;
using posixtrace::cli::EventWriter;
using posixtrace::cli::LogDescription;
using posixtrace::cli::LoggedEvent;

using namespace cli_support;
namespace export_support {

namespace fs = std::filesystem;

const char *const kPython = "/usr/bin/python3.11";

// ---- running programs -------------------------------------------------------

using test_support::TempDir;

inline std::vector<std::string> split(const std::string &line, char separator)
{
    std::vector<std::string> parts;
    std::istringstream stream(line);
    for (std::string part; std::getline(stream, part, separator);)
        parts.push_back(part);
    if (!line.empty() && line.back() == separator)
        parts.push_back("");
    return parts;
}

// ---- reading the outputs ----------------------------------------------------

// A Chrome trace file, parsed by Python's json module and flattened into one
// tab-separated line per trace event: ph, name, pid, tid, then for "M" the
// name given, for others ts ("%.3f"), scope, args.data_hex, args.args.
struct ChromeEvent {
    std::string ph, name, pid, tid, ts, scope, data_hex, usdt_args, label;
};

struct ChromeTrace {
    int status = -1;
    std::string error;
    std::string display_time_unit;
    std::string first_event_time_ns;
    std::string trace_name;
    std::vector<ChromeEvent> events;

    std::vector<ChromeEvent> with_phase(const std::string &ph) const
    {
        std::vector<ChromeEvent> found;
        for (const auto &event : events)
            if (event.ph == ph)
                found.push_back(event);
        return found;
    }
};

const char *const kFlattenChrome = R"(
import json, sys
doc = json.load(open(sys.argv[1], encoding='utf-8'))
out = []
other = doc['otherData']
out.append('\t'.join(['unit', doc['displayTimeUnit'], str(other['first_event_time_ns']),
                      other['trace_name']]))
for e in doc['traceEvents']:
    common = [e['ph'], e['name'], str(e['pid']), str(e['tid'])]
    if e['ph'] == 'M':
        out.append('\t'.join(common + [e['args']['name']]))
        continue
    args = e.get('args', {})
    out.append('\t'.join(common + ['%.3f' % e['ts'], e.get('s', ''), args.get('data_hex', ''),
                                   json.dumps(args['args']) if 'args' in args else '']))
sys.stdout.buffer.write(('\n'.join(out) + '\n').encode('utf-8'))
)";

inline ChromeTrace read_chrome(const std::string &path)
{
    TempDir scratch;
    std::ofstream(scratch / "flatten.py") << kFlattenChrome;
    Run run = run_shell(std::string(kPython) + " " + (scratch / "flatten.py") + " " + path);
    ChromeTrace trace;
    trace.status = run.status;
    trace.error = run.err;
    auto lines = run.lines();
    if (run.status != 0 || lines.empty())
        return trace;
    auto head = split(lines[0], '\t');
    REQUIRE(head.size() == 4);
    trace.display_time_unit = head[1];
    trace.first_event_time_ns = head[2];
    trace.trace_name = head[3];
    for (size_t i = 1; i < lines.size(); ++i) {
        auto f = split(lines[i], '\t');
        REQUIRE(f.size() >= 5);
        ChromeEvent event{f[0], f[1], f[2], f[3]};
        if (event.ph == "M") {
            event.label = f[4];
        } else {
            REQUIRE(f.size() == 8);
            event.ts = f[4];
            event.scope = f[5];
            event.data_hex = f[6];
            event.usdt_args = f[7];
        }
        trace.events.push_back(event);
    }
    return trace;
}

// babeltrace2's text output of a CTF trace, timestamps as seconds since the
// epoch: one line per event.
inline Run read_ctf(const std::string &directory)
{
    return run_shell("babeltrace2 --clock-seconds " + directory);
}

inline std::string seconds_text(uint64_t ns)
{
    char text[40];
    std::snprintf(text, sizeof text, "[%" PRIu64 ".%09" PRIu64 "]", ns / 1000000000,
                  ns % 1000000000);
    return text;
}

// Microseconds since `origin_ns`, as the Chrome file has them (%.3f).
inline std::string microseconds_text(uint64_t ns, uint64_t origin_ns)
{
    char text[40];
    std::snprintf(text, sizeof text, "%" PRIu64 ".%03" PRIu64, (ns - origin_ns) / 1000,
                  (ns - origin_ns) % 1000);
    return text;
}

// ---- synthetic events -------------------------------------------------------

struct Synthetic {
    posix_trace_event_info info{};
    std::string name;
    std::vector<unsigned char> data;
};

template <class T> inline std::vector<unsigned char> bytes_of(const T &value)
{
    const auto *bytes = reinterpret_cast<const unsigned char *>(&value);
    return std::vector<unsigned char>(bytes, bytes + sizeof value);
}

inline Synthetic synthetic(trace_event_id_t id, std::string name, uint64_t ns, pid_t pid, pid_t tid,
                           std::vector<unsigned char> data = {})
{
    Synthetic event;
    event.info.posix_event_id = id;
    event.info.posix_pid = pid;
    event.info.posix_tid = tid;
    event.info.posix_timestamp.tv_sec = time_t(ns / 1000000000);
    event.info.posix_timestamp.tv_nsec = long(ns % 1000000000);
    event.info.posix_truncation_status = POSIX_TRACE_NOT_TRUNCATED;
    event.name = std::move(name);
    event.data = std::move(data);
    return event;
}

inline trace_event_id_t td_id(td_event_e event)
{
    return POSIX_TRACE_TD_EVENT_ID(event);
}

inline std::vector<unsigned char> td_data(pid_t tid, const char *comm, uint64_t value = 0,
                                          uint64_t value2 = 0)
{
    td_event_data td{};
    td.tid = tid;
    td.cpu = 3;
    td.pthread_id = 0x7f0000001000;
    td.value = value;
    td.value2 = value2;
    std::strncpy(td.name, comm, sizeof td.name - 1);
    return bytes_of(td);
}

inline std::vector<unsigned char> exec_data(pid_t pid, const std::string &path)
{
    posix_trace_process_exec_data head{pid, pid};
    std::vector<unsigned char> data = bytes_of(head);
    data.insert(data.end(), path.begin(), path.end());
    data.push_back(0);
    return data;
}

constexpr uint64_t kBase = 1'700'000'000'123'456'789;
constexpr pid_t kPid = 4000;
constexpr pid_t kWorker = 4001;

// A short life of a process: start, exec, a thread created, running,
// emitting a user and a USDT event, switched off, renamed (to a name that is
// not UTF-8 and has a quote), on a CPU again until the stream stops.
inline std::vector<Synthetic> scenario()
{
    int64_t usdt_args[] = {7, -1};
    std::vector<unsigned char> usdt(reinterpret_cast<unsigned char *>(usdt_args),
                                    reinterpret_cast<unsigned char *>(usdt_args) + 16);
    return {
        synthetic(POSIX_TRACE_START, "posix_trace_start", kBase, kPid, 0),
        synthetic(POSIX_TRACE_PROCESS_EXEC, "process_exec", kBase + 1000, kPid, kPid,
                  exec_data(kPid, "/usr/bin/app")),
        synthetic(td_id(TD_CREATE), "td_create", kBase + 2000, kPid, kPid,
                  td_data(kPid, "app", kWorker, 0x7f0000002000)),
        synthetic(td_id(TD_SWITCHTO), "td_switchto", kBase + 3500, kPid, kWorker,
                  td_data(kWorker, "worker", 0)),
        synthetic(32, "app:request", kBase + 4000, kPid, kWorker, {0x2a, 0, 0, 0}),
        synthetic(POSIX_TRACE_USDT_EVENT_FIRST, "python:audit", kBase + 5001, kPid, kWorker, usdt),
        synthetic(td_id(TD_SWITCHFROM), "td_switchfrom", kBase + 6000, kPid, kWorker,
                  td_data(kWorker, "worker", 1, kPid)),
        synthetic(td_id(TD_SWITCHTO), "td_switchto", kBase + 7000, kPid, kWorker,
                  td_data(kWorker, "we\"ird\xff", 0)),
        synthetic(POSIX_TRACE_STOP, "posix_trace_stop", kBase + 8000, kPid, 0,
                  bytes_of(posix_trace_stop_data{POSIX_TRACE_STOP_BY_CALL})),
    };
}

inline LogDescription synthetic_description()
{
    LogDescription description;
    description.trace_name = "synthetic \"trace\"";
    description.generation_version = "posixtrace test";
    description.creation_time = {1'700'000'000, 5};
    return description;
}

inline void feed(EventWriter &writer, const std::vector<Synthetic> &events)
{
    for (const auto &event : events)
        writer.write(LoggedEvent{event.info, event.name, event.data.data(), event.data.size()});
    writer.finish();
}

// ---- logs written by the library --------------------------------------------

inline pid_t gettid_now()
{
    return pid_t(syscall(SYS_gettid));
}

struct EmittedLog {
    std::string path;
    std::vector<pid_t> tids; // the emitting threads
    size_t per_thread = 0;   // app:request events each emitted
};

// A trace log of this process: `threads` threads each emit `per_thread`
// app:request events carrying {thread index, sequence number}.
inline EmittedLog write_log(const TempDir &dir, int threads, size_t per_thread)
{
    EmittedLog log{dir / "app.log", {}, per_thread};
    int fd = open(log.path.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    posix_trace_attr_setname(&attr, "export-test");
    trace_id_t trid;
    int err = posix_trace_create_withlog(0, &attr, fd, &trid);
    posix_trace_attr_destroy(&attr);
    REQUIRE(err == 0);
    {
        test_support::StreamGuard guard(trid);
        test_support::filter_thread_events(trid);
        trace_event_id_t request;
        REQUIRE(posix_trace_eventid_open("app:request", &request) == 0);
        REQUIRE(posix_trace_start(trid) == 0);
        std::vector<pid_t> tids(static_cast<size_t>(threads), 0);
        std::vector<std::thread> emitters;
        for (int t = 0; t < threads; ++t)
            emitters.emplace_back([&, t] {
                tids[size_t(t)] = gettid_now();
                for (uint32_t i = 0; i < per_thread; ++i) {
                    uint32_t data[2] = {uint32_t(t), i};
                    posix_trace_event(request, data, sizeof data);
                }
            });
        for (auto &emitter : emitters)
            emitter.join();
        log.tids = tids;
        REQUIRE(posix_trace_stop(trid) == 0);
    } // shut down: the log is complete
    close(fd);
    return log;
}

// The value of "key" in a JSON line `dump --json` printed (numbers and
// strings without escapes: all the tests look at).
inline std::string field_of(const std::string &line, const std::string &key)
{
    std::string label = "\"" + key + "\":";
    size_t at = line.find(label);
    if (at == std::string::npos)
        return "";
    at += label.size();
    if (line[at] == '"')
        return line.substr(at + 1, line.find('"', at + 1) - at - 1);
    return line.substr(at, line.find_first_of(",}", at) - at);
}

inline std::string hex_of(uint32_t thread, uint32_t sequence)
{
    uint32_t data[2] = {thread, sequence};
    std::string text;
    char byte[3];
    for (size_t i = 0; i < sizeof data; ++i) {
        std::snprintf(byte, sizeof byte, "%02x", reinterpret_cast<unsigned char *>(data)[i]);
        text += byte;
    }
    return text;
}

} // namespace export_support
