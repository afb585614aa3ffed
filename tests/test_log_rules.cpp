// What POSIX says of a log when its stream is cleared, when the log fills
// up (log full policy UNTIL_FULL) and when the process execs.
#include <catch2/catch.hpp>
#include <linux/magic.h>
#include <posix_trace/events.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "log_support.hpp"
#include "test_support.hpp"

using namespace test_support;

namespace {

constexpr int kLogSize = 64 * 1024;
constexpr int kEventsToFill = 3000; // 100-byte payloads: about 450 KB

// A stream on a small log; the stream itself holds the whole run.
StreamGuard small_log_stream(const TempFile &file, int log_policy)
{
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, log_policy) == 0);
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, kLogSize) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 8u << 20) == 0);
    return make_logged_stream(file.fd(), &a.attr);
}

void emit_numbered(trace_event_id_t id, int count)
{
    for (int i = 0; i < count; ++i) {
        unsigned char payload[100];
        std::memset(payload, i & 0xff, sizeof payload);
        std::memcpy(payload, &i, sizeof i);
        posix_trace_event(id, payload, sizeof payload);
    }
}

int number_of(const Event &event)
{
    int number = -1;
    REQUIRE(event.data.size() >= sizeof number);
    std::memcpy(&number, event.data.data(), sizeof number);
    return number;
}

// posix_trace_flush, then until the log writer is done with it. The log
// overrun status returned is OVERRUN if any status read meanwhile said so
// (each read resets it).
posix_trace_status_info flush_and_wait(trace_id_t trid)
{
    REQUIRE(posix_trace_flush(trid) == 0);
    bool overrun = false;
    posix_trace_status_info status = status_when(trid, flush_ended, [&](const auto &seen) {
        overrun |= seen.posix_log_overrun_status == POSIX_TRACE_OVERRUN;
    });
    INFO("the flush did not end in 5 s");
    REQUIRE(flush_ended(status));
    status.posix_log_overrun_status = overrun ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    return status;
}

std::vector<Event> read_closed_log(const TempFile &file)
{
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    REQUIRE(read.error == 0);
    return read.events;
}

// The bytes of `file` in the page cache.
size_t cached_bytes(const TempFile &file)
{
    size_t size = size_t(file.size());
    void *map = mmap(nullptr, size, PROT_READ, MAP_SHARED, file.fd(), 0);
    REQUIRE(map != MAP_FAILED);
    std::vector<unsigned char> pages((size + 4095) / 4096);
    int err = mincore(map, size, pages.data());
    munmap(map, size);
    REQUIRE(err == 0);
    auto resident =
        std::count_if(pages.begin(), pages.end(), [](unsigned char p) { return p & 1; });
    return size_t(resident) * 4096;
}

} // namespace

TEST_CASE("clear on a stream with log resets the log, except an APPEND log",
          "[log][clear][self-tracing]")
{
    TempFile file;
    int policy = GENERATE(POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_APPEND);
    INFO("log full policy " << policy);
    StreamGuard stream = small_log_stream(file, policy);
    trace_event_id_t before = user_event("clear.before");
    trace_event_id_t after = user_event("clear.after");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    emit_numbered(before, kEventsToFill);
    posix_trace_status_info status = flush_and_wait(stream.get());
    bool bounded = policy != POSIX_TRACE_APPEND;
    CHECK(status.posix_log_full_status == (bounded ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL));
    off_t size_before_clear = file.size();

    REQUIRE(posix_trace_clear(stream.get()) == 0);
    REQUIRE(posix_trace_get_status(stream.get(), &status) == 0);
    CHECK(status.posix_log_full_status == POSIX_TRACE_NOT_FULL);
    CHECK(status.posix_log_overrun_status == POSIX_TRACE_NO_OVERRUN);
    CHECK(status.posix_stream_status == POSIX_TRACE_RUNNING);
    emit_numbered(after, 10);
    REQUIRE(stream.shutdown() == 0);

    std::vector<Event> events = read_closed_log(file);
    std::vector<Event> cleared = user_events_of(events, before);
    std::vector<Event> recorded_after = user_events_of(events, after);
    REQUIRE(recorded_after.size() == 10);
    for (int i = 0; i < 10; ++i)
        CHECK(number_of(recorded_after[size_t(i)]) == i);
    if (bounded) {
        CHECK(cleared.empty());
        // The first event in the log is the first one recorded after the clear.
        REQUIRE(!events.empty());
        CHECK(events.front().info.posix_event_id == after);
        CHECK(number_of(events.front()) == 0);
        posix_trace_status_info log_status = status_of_log(file.path());
        CHECK(log_status.posix_log_full_status == POSIX_TRACE_NOT_FULL);
        CHECK(log_status.posix_log_overrun_status == POSIX_TRACE_NO_OVERRUN);
        if (policy == POSIX_TRACE_UNTIL_FULL)
            CHECK(file.size() < size_before_clear);
    } else {
        REQUIRE(cleared.size() == size_t(kEventsToFill)); // POSIX: unspecified; ours: kept
        for (size_t i = 0; i < cleared.size(); ++i)
            REQUIRE(number_of(cleared[i]) == int(i));
    }
}

TEST_CASE("a full UNTIL_FULL log ends with POSIX_TRACE_STOP and the stream stops",
          "[log][self-tracing]")
{
    TempFile file;
    StreamGuard stream = small_log_stream(file, POSIX_TRACE_UNTIL_FULL);
    trace_event_id_t id = user_event("log.fill");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    emit_numbered(id, kEventsToFill);
    posix_trace_status_info status = flush_and_wait(stream.get());
    CHECK(status.posix_log_full_status == POSIX_TRACE_FULL);
    CHECK(status.posix_stream_status == POSIX_TRACE_SUSPENDED);

    SECTION("nothing follows the stop, even once started again")
    {
        REQUIRE(posix_trace_start(stream.get()) == 0);
        REQUIRE(posix_trace_get_status(stream.get(), &status) == 0);
        CHECK(status.posix_stream_status == POSIX_TRACE_RUNNING);
        emit_numbered(id, 10);
    }
    SECTION("an explicit stop: the log's stop stays the last event") {}
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    REQUIRE(stream.shutdown() == 0);

    std::vector<Event> events = read_closed_log(file);
    REQUIRE(!events.empty());
    const Event &last = events.back();
    REQUIRE(last.info.posix_event_id == POSIX_TRACE_STOP);
    posix_trace_stop_data cause{};
    REQUIRE(last.data.size() == sizeof cause);
    std::memcpy(&cause, last.data.data(), sizeof cause);
    CHECK(cause.cause == POSIX_TRACE_STOP_LOG_FULL);
    auto ids = ids_of(events);
    CHECK(std::count(ids.begin(), ids.end(), POSIX_TRACE_STOP) == 1);
    std::vector<Event> kept = user_events_of(events, id);
    REQUIRE(!kept.empty());
    CHECK(kept.size() < size_t(kEventsToFill));
    for (size_t i = 0; i < kept.size(); ++i)
        REQUIRE(number_of(kept[i]) == int(i)); // the oldest, without a hole
    CHECK(file.size() <= off_t(kLogSize) + 4096);
    CHECK(status_of_log(file.path()).posix_log_full_status == POSIX_TRACE_FULL);
}

TEST_CASE("log status: a stream's log overrun is reset by reading it, a log's is not",
          "[log][self-tracing]")
{
    TempFile file;
    StreamGuard stream = small_log_stream(file, POSIX_TRACE_LOOP);
    trace_event_id_t id = user_event("log.overrun");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    emit_numbered(id, kEventsToFill);
    posix_trace_status_info during_flush = flush_and_wait(stream.get());
    CHECK(during_flush.posix_log_overrun_status == POSIX_TRACE_OVERRUN);
    posix_trace_status_info after{};
    REQUIRE(posix_trace_get_status(stream.get(), &after) == 0);
    CHECK(after.posix_log_overrun_status == POSIX_TRACE_NO_OVERRUN);
    CHECK(after.posix_log_full_status == POSIX_TRACE_FULL); // not reset
    REQUIRE(stream.shutdown() == 0);

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    for (int call = 0; call < 3; ++call) {
        posix_trace_status_info log_status{};
        REQUIRE(posix_trace_get_status(log.get(), &log_status) == 0);
        CHECK(log_status.posix_log_overrun_status == POSIX_TRACE_OVERRUN);
        CHECK(log_status.posix_log_full_status == POSIX_TRACE_FULL);
    }
}

TEST_CASE("exec shuts the streams down: the log holds every event recorded before it",
          "[log][self-tracing]")
{
    TempFile file;
    const int count = 500;
    auto emit_then_exec = [&](const char *program) {
        trace_id_t trid = 0;
        if (posix_trace_create_withlog(0, nullptr, file.fd(), &trid) != 0)
            return 10;
        trace_event_id_t id = 0;
        if (posix_trace_eventid_open("exec.before", &id) != 0 || posix_trace_start(trid) != 0)
            return 11;
        emit_numbered(id, count);
        execl(program, program, static_cast<char *>(nullptr));
        // The exec failed: the stream runs on, as if nothing happened.
        int exec_error = errno;
        emit_numbered(id, 1);
        posix_trace_status_info status{};
        if (posix_trace_get_status(trid, &status) != 0 ||
            status.posix_stream_status != POSIX_TRACE_RUNNING)
            return 12;
        if (posix_trace_shutdown(trid) != 0)
            return 13;
        return exec_error == ENOENT ? 20 : 14;
    };

    SECTION("an exec that succeeds")
    {
        REQUIRE(in_child([&] { return emit_then_exec("/bin/true"); }) == 0);
        std::vector<Event> events = read_closed_log(file);
        std::vector<Event> user;
        for (const Event &event : events)
            if (event.info.posix_event_id >= POSIX_TRACE_USER_EVENT_FIRST)
                user.push_back(event);
        REQUIRE(user.size() == size_t(count));
        for (int i = 0; i < count; ++i)
            REQUIRE(number_of(user[size_t(i)]) == i);
    }
    SECTION("an exec that fails leaves the stream running")
    {
        REQUIRE(in_child([&] { return emit_then_exec("/nonexistent/program"); }) == 20);
        std::vector<Event> events = read_closed_log(file);
        size_t user = 0;
        for (const Event &event : events)
            user += event.info.posix_event_id >= POSIX_TRACE_USER_EVENT_FIRST;
        CHECK(user == size_t(count) + 1);
        CHECK(events.back().info.posix_event_id == POSIX_TRACE_STOP);
    }
}

TEST_CASE("UNTIL_FULL stream with log: a flush empties the full stream, which runs again",
          "[log][self-tracing]")
{
    TempFile file;
    Attr a;
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, POSIX_TRACE_UNTIL_FULL) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 16 * 1024) == 0);
    StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
    trace_event_id_t before = user_event("until_full.before");
    trace_event_id_t after = user_event("until_full.after");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    const int emitted = 1000; // 100 KB: the stream holds about a sixth of them
    emit_numbered(before, emitted);
    // The stream sees the kernel's records within milliseconds.
    posix_trace_status_info status = status_when(stream.get(), [](const auto &now) {
        return now.posix_stream_full_status == POSIX_TRACE_FULL;
    });
    REQUIRE(status.posix_stream_full_status == POSIX_TRACE_FULL);
    CHECK(status.posix_stream_status == POSIX_TRACE_SUSPENDED);

    status = flush_and_wait(stream.get());
    CHECK(status.posix_stream_status == POSIX_TRACE_RUNNING);
    CHECK(status.posix_stream_full_status == POSIX_TRACE_NOT_FULL);
    emit_numbered(after, 10);
    REQUIRE(stream.shutdown() == 0);

    std::vector<Event> events = read_closed_log(file);
    auto ids = ids_of(events);
    std::vector<Event> kept = user_events_of(events, before);
    REQUIRE(!kept.empty());
    for (size_t i = 0; i < kept.size(); ++i)
        REQUIRE(number_of(kept[i]) == int(i));
    auto stop = std::find(ids.begin(), ids.end(), POSIX_TRACE_STOP);
    // What the stream refused while full is reported after its stop.
    auto refusals = std::find(stop, ids.end(), POSIX_TRACE_OVERFLOW);
    auto restart = std::find(refusals, ids.end(), POSIX_TRACE_START);
    REQUIRE(stop != ids.end());
    REQUIRE(refusals != ids.end());
    REQUIRE(restart != ids.end());
    CHECK(ids.front() == POSIX_TRACE_START); // a loss is never reported before it
    posix_trace_stop_data cause{};
    std::memcpy(&cause, events[size_t(stop - ids.begin())].data.data(), sizeof cause);
    CHECK(cause.cause == POSIX_TRACE_STOP_STREAM_FULL);
    CHECK(std::count(ids.begin(), stop, before) == std::ptrdiff_t(kept.size()));
    // Every event emitted is in the log or counted lost, exactly: refused
    // while full, and, when the burst outran the drain thread's first pass,
    // lost in a full ring (reported after the start, before the events).
    uint64_t lost = 0, refused = 0;
    for (auto at = ids.begin(); at != restart; ++at)
        if (*at == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data loss{};
            std::memcpy(&loss, events[size_t(at - ids.begin())].data.data(), sizeof loss);
            lost += loss.lost;
            refused += at > stop ? loss.lost_in_stream : 0;
        }
    CAPTURE(kept.size(), lost, refused);
    CHECK(refused > 0);
    CHECK(kept.size() + lost == size_t(emitted));
    std::vector<Event> recorded_after = user_events_of(events, after);
    REQUIRE(recorded_after.size() == 10);
    CHECK(std::find(ids.begin(), ids.end(), after) > restart);
}

TEST_CASE("exit shuts the streams down: the log is flushed and closed", "[log][self-tracing]")
{
    TempFile file;
    std::string helper = helper_path("exit_with_log");
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        execl(helper.c_str(), helper.c_str(), file.path().c_str(), static_cast<char *>(nullptr));
        _exit(127);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);

    std::vector<Event> events = read_closed_log(file);
    std::vector<Event> user;
    for (const Event &event : events)
        if (event.info.posix_event_id >= POSIX_TRACE_USER_EVENT_FIRST)
            user.push_back(event);
    REQUIRE(user.size() == 100);
    for (int i = 0; i < 100; ++i)
        CHECK(number_of(user[size_t(i)]) == i);
    REQUIRE(!events.empty());
    // The stop event of a shutdown: the stream was shut down, not just left behind.
    CHECK(events.back().info.posix_event_id == POSIX_TRACE_STOP);
}

// A log written where an older, longer one lies (the file opened without
// O_TRUNC) is read as itself alone: the older log's slots and end are gone.
TEST_CASE("a log written over an older one in the same file reads as itself alone",
          "[log][self-tracing]")
{
    int policy = GENERATE(POSIX_TRACE_LOOP, POSIX_TRACE_APPEND, POSIX_TRACE_UNTIL_FULL);
    INFO("log full policy " << policy);
    TempFile file;
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, policy) == 0);
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, 4u << 20) == 0); // LOOP: 16 slots
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 8u << 20) == 0);
    {
        StreamGuard older = make_logged_stream(file.fd(), &a.attr);
        REQUIRE(posix_trace_start(older.get()) == 0);
        emit_numbered(user_event("log.older"), 20'000); // about 3 MB: 12 slots
        REQUIRE(older.shutdown() == 0);
    }
    int fd = open(file.path().c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    {
        StreamGuard newer = make_logged_stream(fd, &a.attr);
        trace_event_id_t id = user_event("log.newer");
        REQUIRE(posix_trace_start(newer.get()) == 0);
        for (int i = 0; i < 100; ++i) {
            unsigned char payload[40] = {};
            std::memcpy(payload, &i, sizeof i);
            posix_trace_event(id, payload, sizeof payload);
        }
        REQUIRE(newer.shutdown() == 0);
    }
    close(fd);
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    CHECK(read.error == 0);
    std::vector<int> numbers;
    for (const Event &event : read.events) {
        if (event.info.posix_event_id < POSIX_TRACE_USER_EVENT_FIRST)
            continue;
        CHECK(event.data.size() == 40);
        numbers.push_back(number_of(event));
    }
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i)
        expected[size_t(i)] = i;
    CHECK(numbers == expected);
}

TEST_CASE("a LOOP log takes no more than log-max-size for its events, however small",
          "[log][self-tracing]")
{
    size_t log_size =
        GENERATE(size_t(4096), size_t(5000), size_t(20000), size_t(65536), size_t(1) << 20);
    INFO("log-max-size " << log_size);
    Attr a;
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, log_size) == 0);
    REQUIRE(posix_trace_attr_setmaxdatasize(&a.attr, 8192) == 0);
    // An APPEND log just created is its header alone; a LOOP log just created
    // is its header, rounded up to a page, and all its slots.
    TempFile header_only;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    StreamGuard append = make_logged_stream(header_only.fd(), &a.attr);
    TempFile file;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_LOOP) == 0);
    StreamGuard loop = make_logged_stream(file.fd(), &a.attr);
    off_t header = (header_only.size() + 4095) / 4096 * 4096;
    CHECK(file.size() - header <= off_t(log_size));
    REQUIRE(append.shutdown() == 0);

    // Events as large as max-data-size still go through (truncated to fit a
    // slot when the log is that small), newest kept, in order.
    trace_event_id_t id = user_event("loop.small");
    REQUIRE(posix_trace_start(loop.get()) == 0);
    std::vector<unsigned char> large(8192);
    for (int i = 0; i < 200; ++i) {
        std::memset(large.data(), i, large.size());
        std::memcpy(large.data(), &i, sizeof i);
        posix_trace_event(id, large.data(), large.size());
    }
    REQUIRE(loop.shutdown() == 0);
    std::vector<Event> kept = user_events_of(read_closed_log(file), id);
    REQUIRE(!kept.empty());
    int newest = number_of(kept.back());
    CHECK(newest == 199);
    for (size_t i = 0; i < kept.size(); ++i) {
        CHECK(number_of(kept[i]) == newest - int(kept.size() - 1 - i));
        bool whole = kept[i].data.size() == large.size();
        CHECK(kept[i].info.posix_truncation_status ==
              (whole ? POSIX_TRACE_NOT_TRUNCATED : POSIX_TRACE_TRUNCATED_RECORD));
    }
}

TEST_CASE("opening a LOOP log reads its slots' headers, not the pages of its empty slots",
          "[log][self-tracing]")
{
    TempFile file;
    struct statfs where;
    REQUIRE(fstatfs(file.fd(), &where) == 0);
    if (where.f_type == TMPFS_MAGIC) {
        WARN("the log's file system holds it in memory: nothing to measure");
        return;
    }
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_LOOP) == 0);
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, 64u << 20) == 0);   // 256 slots of 256 KiB
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 8u << 20) == 0); // room for each 5,000
    StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
    trace_event_id_t id = user_event("loop.sparse");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    // About a sixth of the slots written, left in the page cache as a log
    // just recorded is: reading their headers in turn looks sequential to
    // the kernel, whose readahead then grows and runs on into the empty ones.
    for (int i = 0; i < 20; ++i) {
        emit_numbered(id, 5000);
        flush_and_wait(stream.get());
    }
    REQUIRE(stream.shutdown() == 0);
    size_t cached_before = cached_bytes(file);

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    // At most a page for each slot's header, and 256 KiB for the log's
    // header and trailer and their readahead.
    CHECK(cached_bytes(file) <= cached_before + (256 + 64) * 4096);
    LogRead read = read_log(log.get());
    CHECK(read.error == 0);
    CHECK(user_events_of(read.events, id).size() == 20 * 5000);
}

TEST_CASE("get_status shows a flush under way as FLUSHING, and its end", "[log][self-tracing]")
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 1u << 20) == 0);
    StreamGuard stream = make_logged_stream(fds[1], &a.attr);
    close(fds[1]); // the log writer has its own descriptor
    trace_event_id_t id = user_event("log.flushing");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    emit_numbered(id, 2000); // about 300 KB: more than the pipe holds

    // Nobody reads the pipe: the writer cannot finish the flush.
    REQUIRE(posix_trace_flush(stream.get()) == 0);
    posix_trace_status_info status{};
    for (int i = 0; i < 5; ++i) {
        REQUIRE(posix_trace_get_status(stream.get(), &status) == 0);
        CHECK(status.posix_stream_flush_status == POSIX_TRACE_FLUSHING);
        usleep(10000);
    }
    size_t read_bytes = 0;
    std::thread reader([&] {
        char chunk[65536];
        ssize_t n;
        while ((n = read(fds[0], chunk, sizeof chunk)) > 0)
            read_bytes += size_t(n);
    });
    status = status_when(stream.get(), flush_ended);
    CHECK(status.posix_stream_flush_status == POSIX_TRACE_NOT_FLUSHING);
    CHECK(status.posix_stream_flush_error == 0);
    REQUIRE(stream.shutdown() == 0); // closes the writing end: the reader ends
    reader.join();
    close(fds[0]);
    CHECK(read_bytes > 2000 * 100);
}

// An APPEND log keeps its blocks through posix_trace_clear; when their write
// fails afterwards, the events in them were cleared already: no loss of the
// cleared stream, and no count taken from what it recorded since.
TEST_CASE("clear: a pipe log that fails after the clear leaves the cleared counters whole",
          "[log][self-tracing]")
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 1u << 20) == 0);
    StreamGuard stream = make_logged_stream(fds[1], &a.attr);
    close(fds[1]);
    trace_event_id_t id = user_event("log.cleared");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    emit_numbered(id, 2000); // about 300 KB: more than the pipe holds
    REQUIRE(posix_trace_flush(stream.get()) == 0);
    posix_trace_status_info status{};
    REQUIRE(posix_trace_get_status(stream.get(), &status) == 0);
    REQUIRE(status.posix_stream_flush_status == POSIX_TRACE_FLUSHING);

    CHECK(posix_trace_clear(stream.get()) == 0);
    close(fds[0]); // the blocked write fails, and every block after it
    status = status_when(stream.get(), flush_ended);
    REQUIRE(status.posix_stream_flush_status == POSIX_TRACE_NOT_FLUSHING);
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(stream.get(), &counters) == 0);
    uint64_t unwritten = 0;
    REQUIRE(posix_trace_get_unwritten_events(stream.get(), &unwritten) == 0);
    CAPTURE(counters.recorded, counters.lost_in_stream, unwritten);
    CHECK(counters.recorded < 100); // the error event, and the library's own
    CHECK(unwritten == 0);
    CHECK(counters.lost_in_stream == 0);
    CHECK(stream.shutdown() == EIO);
}
