// A process in a PID namespace of its own (a container's), traced by pid
// from the host: its events carry the host's numbers, and the numbers its
// own namespace gives it come with them, through the stream and its log.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <posix_trace/usdt.h>
#include <trace.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "clickhouse_support.hpp"
#include "export_support.hpp"
#include "log/log_format.hpp"
#include "log_support.hpp"
#include "test_support.hpp"
#include "thread_events_support.hpp"

using namespace test_support;

namespace {

// A helper run by unshare as the first process of a new PID namespace; the
// conversation goes through to it.
class Namespaced {
public:
    explicit Namespaced(std::vector<std::string> helper)
        : child_([&] {
              std::vector<std::string> argv{"/usr/bin/unshare", "--pid", "--fork"};
              argv.insert(argv.end(), helper.begin(), helper.end());
              return argv;
          }())
    {
        REQUIRE(child_.read_line() == "ready\n");
        std::ifstream children("/proc/" + std::to_string(child_.pid()) + "/task/" +
                               std::to_string(child_.pid()) + "/children");
        REQUIRE(children >> host_pid_);
        // NSpid: the host's number, then the new namespace's
        std::ifstream status("/proc/" + std::to_string(host_pid_) + "/status");
        std::string line;
        while (std::getline(status, line))
            if (line.rfind("NSpid:", 0) == 0)
                namespace_pids_ = line;
    }
    pid_t host_pid() const { return host_pid_; }
    const std::string &namespace_pids() const { return namespace_pids_; }
    // Says a line and returns the helper's answer.
    std::string run()
    {
        child_.say("go\n");
        return child_.read_line();
    }
    void finish() { child_.say("bye\n"); }

private:
    ChildConversation child_;
    pid_t host_pid_ = 0;
    std::string namespace_pids_;
};

struct ReadEvent {
    trace_event_id_t id;
    pid_t pid, tid;
    int ids_error;
    posix_trace_namespace_ids ids;
};

// The next event of `trid`; false when none is available.
bool next_event_of(trace_id_t trid, posix_trace_event_info &info)
{
    unsigned char data[256];
    size_t len = 0;
    int unavailable = 0;
    REQUIRE(posix_trace_getnext_event(trid, &info, data, sizeof data, &len, &unavailable) == 0);
    return !unavailable;
}

std::vector<ReadEvent> read_with_namespace_ids(trace_id_t trid)
{
    std::vector<ReadEvent> events;
    for (;;) {
        posix_trace_event_info info;
        if (!next_event_of(trid, info))
            return events;
        ReadEvent event{info.posix_event_id, info.posix_pid, info.posix_tid, 0, {-1, -1}};
        event.ids_error = posix_trace_event_namespace_ids(trid, &event.ids);
        events.push_back(event);
        if (info.posix_event_id == POSIX_TRACE_STOP)
            return events;
    }
}

// Every probe event, and every thread event, is the namespaced process's,
// by the host's numbers and by its own (process 1 of its namespace, its
// only thread 1); the stream's own events have none.
void check_events(const std::vector<ReadEvent> &events, pid_t host_pid)
{
    size_t probes = 0, system = 0;
    for (const ReadEvent &event : events) {
        if (event.id <= POSIX_TRACE_FLUSH_STOP) {
            ++system;
            CHECK(event.ids_error == ENODATA);
            continue;
        }
        probes += event.id >= POSIX_TRACE_USDT_EVENT_FIRST;
        CHECK(event.pid == host_pid);
        CHECK(event.tid == host_pid);
        REQUIRE(event.ids_error == 0);
        CHECK(event.ids.pid == 1);
        CHECK(event.ids.tid == 1);
    }
    CHECK(probes == 1000);
    CHECK(system >= 2); // start and stop
}

trace_id_t traced_probes(pid_t pid, int log_fd)
{
    trace_id_t trid;
    if (log_fd >= 0)
        REQUIRE(posix_trace_create_withlog(pid, nullptr, log_fd, &trid) == 0);
    else
        REQUIRE(posix_trace_create(pid, nullptr, &trid) == 0);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(trid, "ownapp:*", &attached) == 0);
    REQUIRE(attached == 2);
    return trid;
}

// A log of the namespaced helper's probes, written to `fd`, its stream
// stopped and shut down; returns the helper's host pid.
pid_t record_namespaced_log(int fd)
{
    Namespaced app({helper_path("own_probes")});
    trace_id_t trid = traced_probes(app.host_pid(), fd);
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(app.run() == "fired 500\n");
    REQUIRE(posix_trace_stop(trid) == 0);
    app.finish();
    REQUIRE(posix_trace_shutdown(trid) == 0);
    return app.host_pid();
}

} // namespace

TEST_CASE("namespace ids: USDT events of a process in a PID namespace of its own carry its "
          "numbers there",
          "[usdt][namespace]")
{
    Namespaced app({helper_path("own_probes")});
    // the host's number first, then 1: the helper is the namespace's first
    REQUIRE(app.namespace_pids() == "NSpid:\t" + std::to_string(app.host_pid()) + "\t1");
    trace_id_t trid = traced_probes(app.host_pid(), -1);
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(app.run() == "fired 500\n");
    REQUIRE(posix_trace_stop(trid) == 0);
    check_events(read_with_namespace_ids(trid), app.host_pid());
    app.finish();
    REQUIRE(posix_trace_shutdown(trid) == 0);
}

TEST_CASE("namespace ids: a small LOOP stream overwrites events that carry them and keeps the "
          "newest whole",
          "[usdt][namespace]")
{
    Namespaced app({helper_path("own_probes")});
    Attr loop;
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&loop.attr, POSIX_TRACE_LOOP) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&loop.attr, 16 * 1024) == 0);
    trace_id_t trid;
    REQUIRE(posix_trace_create(app.host_pid(), &loop.attr, &trid) == 0);
    REQUIRE(posix_trace_usdt_attach(trid, "ownapp:plain", nullptr) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(app.run() == "fired 0\n"); // the guarded probe's semaphore stays down

    REQUIRE(posix_trace_stop(trid) == 0);
    std::vector<ReadEvent> events = read_with_namespace_ids(trid);
    size_t probes = 0, overflows = 0;
    for (const ReadEvent &event : events) {
        overflows += event.id == POSIX_TRACE_OVERFLOW;
        if (event.id < POSIX_TRACE_USDT_EVENT_FIRST)
            continue;
        ++probes;
        REQUIRE(event.ids_error == 0);
        CHECK(event.ids.pid == 1);
        CHECK(event.ids.tid == 1);
    }
    CHECK(probes > 0);
    CHECK(probes < 500); // the oldest were overwritten
    CHECK(overflows >= 1);
    app.finish();
    REQUIRE(posix_trace_shutdown(trid) == 0);
}

TEST_CASE("namespace ids: a log keeps them, and a reader gives them back", "[usdt][namespace][log]")
{
    TempFile log;
    pid_t host_pid = record_namespaced_log(log.fd());
    LogGuard opened(log.path());
    REQUIRE(opened.open_error() == 0);
    check_events(read_with_namespace_ids(opened.get()), host_pid);
}

namespace {

// Reads `trid` up to its first event of a USDT probe.
void read_to_first_probe(trace_id_t trid)
{
    posix_trace_event_info info;
    do
        REQUIRE(next_event_of(trid, info));
    while (info.posix_event_id < POSIX_TRACE_USDT_EVENT_FIRST);
}

} // namespace

TEST_CASE("namespace ids: each trace a thread reads in turn answers for its own last event",
          "[usdt][namespace][log]")
{
    TempFile log;
    record_namespaced_log(log.fd());
    // more than the traces the library keeps apart before it looks for closed ones
    std::vector<std::unique_ptr<LogGuard>> opened;
    for (int i = 0; i < 20; ++i) {
        opened.push_back(std::make_unique<LogGuard>(log.path()));
        REQUIRE(opened.back()->open_error() == 0);
    }
    posix_trace_namespace_ids ids{};
    for (auto &trace : opened) {
        CHECK(posix_trace_event_namespace_ids(trace->get(), &ids) == ENODATA); // none read yet
        read_to_first_probe(trace->get());
    }
    for (auto &trace : opened) {
        ids = {-1, -1};
        REQUIRE(posix_trace_event_namespace_ids(trace->get(), &ids) == 0);
        CHECK(ids.pid == 1);
        CHECK(ids.tid == 1);
    }
    // a trace's next event, the stream's own, has none; the others keep theirs
    posix_trace_event_info info;
    LogGuard other(log.path());
    REQUIRE(next_event_of(other.get(), info));
    REQUIRE(info.posix_event_id == POSIX_TRACE_START);
    CHECK(posix_trace_event_namespace_ids(other.get(), &ids) == ENODATA);
    REQUIRE(posix_trace_event_namespace_ids(opened.front()->get(), &ids) == 0);
    CHECK(ids.pid == 1);
}

TEST_CASE("namespace ids: a child forked inside the namespace is traced by its own numbers there",
          "[usdt][namespace][lifecycle]")
{
    constexpr int kChildProbes = 50;
    Namespaced app({helper_path("spawner"), "fork", std::to_string(kChildProbes)});
    Attr inherited;
    REQUIRE(posix_trace_attr_setinherited(&inherited.attr, POSIX_TRACE_INHERITED) == 0);
    trace_id_t trid;
    REQUIRE(posix_trace_create(app.host_pid(), &inherited.attr, &trid) == 0);
    REQUIRE(filter_out_thread_events(trid) == 0);
    REQUIRE(posix_trace_usdt_attach(trid, "spawner:*", nullptr) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(app.run() == "child exited 0\n");
    REQUIRE(posix_trace_stop(trid) == 0);

    // The parent is its namespace's process 1; its child, the next one, 2.
    size_t child_probes = 0, child_exits = 0, forks = 0;
    for (const ReadEvent &event : read_with_namespace_ids(trid)) {
        if (event.id <= POSIX_TRACE_FLUSH_STOP)
            continue;
        INFO("event " << event.id << " of process " << event.pid);
        REQUIRE(event.ids_error == 0);
        bool parent = event.pid == app.host_pid();
        CHECK(event.ids.pid == (parent ? 1 : 2));
        CHECK(event.ids.tid == event.ids.pid);
        forks += parent && event.id == POSIX_TRACE_PROCESS_FORK;
        child_probes += !parent && event.id >= POSIX_TRACE_USDT_EVENT_FIRST;
        child_exits += !parent && event.id == POSIX_TRACE_PROCESS_EXIT;
    }
    CHECK(forks == 1);
    CHECK(child_probes == kChildProbes);
    CHECK(child_exits == 1);
    app.finish();
    REQUIRE(posix_trace_shutdown(trid) == 0);
}

TEST_CASE("namespace ids: thread events of a namespaced process name each thread as its "
          "namespace does",
          "[td][namespace]")
{
    constexpr int kThreads = 8;
    std::optional<thread_events_support::ScopedEnvironment> raw;
    SECTION("through the tracepoints of BTF-typed arguments") {}
    SECTION("through their raw twins, as on a kernel whose BTF lacks those types")
    {
        raw.emplace("POSIXTRACE_RAW_TRACEPOINTS", "1");
    }
    Namespaced app({helper_path("thread_workload"), "threads", std::to_string(kThreads)});
    trace_id_t trid;
    REQUIRE(posix_trace_create(app.host_pid(), nullptr, &trid) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    REQUIRE(app.run().rfind("done ", 0) == 0);
    REQUIRE(posix_trace_stop(trid) == 0);

    // host tid -> the namespace's; each thread has one, and no two the same
    std::map<pid_t, pid_t> namespace_tid_of;
    std::set<pid_t> namespace_tids, dead;
    size_t deaths = 0;
    for (const ReadEvent &event : read_with_namespace_ids(trid)) {
        if (event.id <= POSIX_TRACE_FLUSH_STOP)
            continue;
        REQUIRE(event.pid == app.host_pid());
        INFO("event " << event.id << " of thread " << event.tid);
        // its last switch off, its reap: the kernel numbers the thread no more
        if (event.ids_error == ENODATA && dead.count(event.tid))
            continue;
        REQUIRE(event.ids_error == 0);
        CHECK(event.ids.pid == 1);
        if (event.id == POSIX_TRACE_TD_EVENT_ID(TD_DEATH) && event.tid != event.pid) {
            ++deaths;
            dead.insert(event.tid);
        }
        auto [known, added] = namespace_tid_of.emplace(event.tid, event.ids.tid);
        CHECK(known->second == event.ids.tid);
        if (added)
            CHECK(namespace_tids.insert(event.ids.tid).second);
    }
    CHECK(deaths == kThreads);
    REQUIRE(namespace_tid_of.size() == kThreads + 1);
    CHECK(namespace_tid_of[app.host_pid()] == 1);
    // numbered from 2 on in the new namespace, which holds nothing else
    CHECK(*namespace_tids.begin() == 1);
    CHECK(*namespace_tids.rbegin() == kThreads + 1);
    app.finish();
    REQUIRE(posix_trace_shutdown(trid) == 0);
}

namespace {

namespace format = posixtrace::log;

// Where the first namespace ids record of the log's first block is, and the
// record before it; the block's offset.
struct IdsRecordAt {
    size_t block = 0, before = 0, ids = 0;
};

IdsRecordAt first_ids_record(const std::vector<unsigned char> &log)
{
    IdsRecordAt found;
    found.block = size_t(format::load<uint64_t>(log.data() + 16));
    uint32_t payload = format::load<uint32_t>(log.data() + found.block + 16);
    size_t end = found.block + format::kBlockHeaderSize + payload;
    for (size_t at = found.block + format::kBlockHeaderSize, before = 0; at < end;) {
        if (format::load<uint16_t>(log.data() + at + 4) == format::kRecordNamespaceIds) {
            found.before = before;
            found.ids = at;
            return found;
        }
        before = at;
        at += format::load<uint32_t>(log.data() + at);
    }
    FAIL("no namespace ids record in the first block");
    return found;
}

void seal_block(std::vector<unsigned char> &log, size_t block)
{
    uint32_t payload = format::load<uint32_t>(log.data() + block + 16);
    format::store<uint32_t>(
        log.data() + block + 4,
        format::crc32_of(log.data() + block + 8, format::kBlockHeaderSize - 8 + payload));
}

struct BlockRecord {
    size_t at, size;
    uint16_t type;
};

std::vector<BlockRecord> records_of_block(const std::vector<unsigned char> &log, size_t block)
{
    std::vector<BlockRecord> records;
    uint32_t payload = format::load<uint32_t>(log.data() + block + 16);
    size_t end = block + format::kBlockHeaderSize + payload;
    for (size_t at = block + format::kBlockHeaderSize; at < end;) {
        uint32_t size = format::load<uint32_t>(log.data() + at);
        REQUIRE(size >= 16);
        records.push_back({at, size, format::load<uint16_t>(log.data() + at + 4)});
        at += size;
    }
    return records;
}

// A record of a type the reader skips over [at, at + size).
void write_skipped_record(std::vector<unsigned char> &log, size_t at, size_t size)
{
    REQUIRE(size >= 16);
    REQUIRE(size % 8 == 0);
    std::memset(log.data() + at, 0, size);
    format::store<uint32_t>(log.data() + at, uint32_t(size));
    format::store<uint16_t>(log.data() + at + 4, 99);
}

void expect_refused(const std::vector<unsigned char> &log)
{
    TempFile crafted;
    crafted.write_bytes(log);
    LogGuard opened(crafted.path());
    REQUIRE(opened.open_error() == 0);
    LogRead read = read_log(opened.get(), false);
    CHECK(read.error == EINVAL);
    CHECK(read.events.empty()); // the block is refused whole
}

} // namespace

TEST_CASE("namespace ids: a log whose ids record belongs to no event is damaged",
          "[namespace][log][hostile]")
{
    TempFile written;
    record_namespaced_log(written.fd());
    std::vector<unsigned char> log = written.bytes();
    IdsRecordAt at = first_ids_record(log);
    REQUIRE(format::load<uint16_t>(log.data() + at.before + 4) == format::kRecordEvent);

    // the event it followed made a record of a type the reader skips
    format::store<uint16_t>(log.data() + at.before + 4, 99);
    seal_block(log, at.block);
    expect_refused(log);
}

TEST_CASE("namespace ids: dump, export and push show them; a table made before them gets them",
          "[namespace][cli][push][clickhouse]")
{
    TempDir dir;
    std::string log = dir / "namespaced.log";
    int fd = open(log.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    record_namespaced_log(fd);
    close(fd);

    cli_support::Run dump = cli_support::run_cli("dump --json " + log);
    REQUIRE(dump.status == 0);
    size_t dumped_with = 0, dumped = dump.lines().size();
    for (const std::string &line : dump.lines())
        if (line.find("\"ns_pid\":1,\"ns_tid\":1}") != std::string::npos)
            ++dumped_with;
    CHECK(dumped_with >= 1000);
    cli_support::Run text = cli_support::run_cli("dump " + log);
    CHECK(text.out.find(" ns_pid=1 ns_tid=1\n") != std::string::npos);

    std::string rows = dir / "rows.jsonl";
    REQUIRE(cli_support::run_cli("export " + log + " --format jsonl -o " + rows).status == 0);
    std::ifstream exported(rows);
    size_t exported_with = 0;
    for (std::string line; std::getline(exported, line);) {
        bool has = line.find("\"process.vpid\":1,\"thread.vtid\":1,") != std::string::npos;
        exported_with += has;
        if (export_support::field_of(line, "event.class") == "system")
            CHECK_FALSE(has);
    }
    CHECK(exported_with == dumped_with);

    clickhouse_support::ClickHouseServer server;
    server.answer(clickhouse_support::kFirstReleaseEventsTable);
    cli_support::Run push = cli_support::run_cli("push --clickhouse " + server.url() + " " + log);
    INFO(push.err);
    REQUIRE(push.status == 0);
    CHECK(server.answer("SELECT count() FROM posixtrace.events FINAL WHERE `process.vpid` = 1 "
                        "AND `thread.vtid` = 1") == std::to_string(dumped_with) + "\n");
    CHECK(server.answer("SELECT count() FROM posixtrace.events FINAL WHERE `process.vpid` = 0") ==
          std::to_string(dumped - dumped_with) + "\n");
}

TEST_CASE("namespace ids: a log whose ids record is of another size, repeated, or first in its "
          "block is damaged",
          "[namespace][log][hostile]")
{
    TempFile written;
    record_namespaced_log(written.fd());
    std::vector<unsigned char> log = written.bytes();
    IdsRecordAt at = first_ids_record(log);
    std::vector<BlockRecord> records = records_of_block(log, at.block);
    size_t index = 0;
    while (records[index].at != at.ids)
        ++index;
    REQUIRE(index + 1 < records.size());
    uint32_t count = format::load<uint32_t>(log.data() + at.block + 20);
    REQUIRE(count == records.size());

    SECTION("24 bytes, not 16")
    {
        // taken from the event after it, which becomes a skipped record
        const BlockRecord &next = records[index + 1];
        REQUIRE(next.size >= 24);
        format::store<uint32_t>(log.data() + at.ids, 24);
        write_skipped_record(log, next.at + 8, next.size - 8);
    }
    SECTION("two after one event")
    {
        // the event after it becomes a second ids record and a skipped one
        const BlockRecord &next = records[index + 1];
        REQUIRE(next.type == format::kRecordEvent);
        REQUIRE(next.size >= 32);
        std::vector<unsigned char> ids(log.begin() + long(at.ids), log.begin() + long(at.ids) + 16);
        write_skipped_record(log, next.at + 16, next.size - 16);
        std::memcpy(log.data() + next.at, ids.data(), ids.size());
        format::store<uint32_t>(log.data() + at.block + 20, count + 1);
    }
    SECTION("the first of its block")
    {
        // the records before it become one skipped record after it
        size_t start = at.block + format::kBlockHeaderSize;
        std::vector<unsigned char> ids(log.begin() + long(at.ids), log.begin() + long(at.ids) + 16);
        write_skipped_record(log, start + 16, at.ids - start);
        std::memcpy(log.data() + start, ids.data(), ids.size());
        format::store<uint32_t>(log.data() + at.block + 20, uint32_t(count - index + 1));
    }
    seal_block(log, at.block);
    expect_refused(log);
}
