// Trace logs that are cut short, damaged, left by a killed tracer or out of
// room: what reads back is exactly what was written, up to the damage, and
// errors are POSIX's (EINVAL, ENOSPC, EFBIG). Real BPF streams, real files.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "log/log_format.hpp"
#include "log_support.hpp"
#include "test_support.hpp"
#include "util/unique_fd.hpp"

using namespace test_support;

namespace {

// Each of `read` is an event of `all`, and they come in the order of `all`.
bool is_in_order_within(const std::vector<Event> &read, const std::vector<Event> &all)
{
    size_t at = 0;
    for (const Event &event : read) {
        while (at < all.size() && !same_event(event, all[at]))
            ++at;
        if (at == all.size())
            return false;
        ++at;
    }
    return true;
}

// The record bytes of the events of `all` from `start` on that `read` (in
// order within it) does not have: in a log whose blocks overlap in time,
// those need not be the last of `all`.
size_t missing_record_bytes(const std::vector<Event> &read, const std::vector<Event> &all,
                            size_t start = 0)
{
    size_t missing = 0, next = 0;
    for (size_t i = start; i < all.size(); ++i) {
        if (next < read.size() && same_event(read[next], all[i]))
            ++next;
        else
            missing +=
                posixtrace::log::padded8(posixtrace::log::kEventRecordHeader + all[i].data.size());
    }
    return missing;
}

} // namespace

TEST_CASE("a log cut short or damaged never yields a wrong event", "[log][self-tracing]")
{
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    REQUIRE(posix_trace_attr_setmaxdatasize(&a.attr, 8192) == 0);
    TempFile original;
    std::vector<Event> all = write_user_event_log(original, 4000, &a.attr);
    auto bytes = original.bytes();
    REQUIRE(bytes.size() > 512 * 1024); // several blocks
    TempFile file;
    std::mt19937 random(20261123);

    SECTION("cut at random points: every complete block before the cut")
    {
        for (int round = 0; round < 40; ++round) {
            size_t cut = random() % bytes.size();
            INFO("cut at " << cut << " of " << bytes.size());
            file.write_bytes({bytes.begin(), bytes.begin() + std::ptrdiff_t(cut)});
            LogGuard log(file.path());
            if (log.open_error() != 0) {
                uint32_t header_size;
                std::memcpy(&header_size, bytes.data() + 12, sizeof header_size);
                CHECK(log.open_error() == EINVAL);
                CHECK(cut < header_size); // only a cut header is refused
                continue;
            }
            LogRead read = read_log(log.get());
            CHECK(read.error == 0);
            REQUIRE(read.events.size() <= all.size());
            // Every event read is one of the log's, in the log's order. In a
            // log whose blocks overlap in time (runs: version 2) a block cut
            // off may have held events older than some of a whole block
            // before it, so what is read need not be the log's beginning.
            REQUIRE(is_in_order_within(read.events, all));
            // What is missing is what was cut off, and at most the one block
            // the cut fell in (a block holds at most 256 KiB of records).
            size_t missing_bytes = missing_record_bytes(read.events, all);
            CHECK(missing_bytes <= bytes.size() - cut + 256 * 1024);
        }
    }
    SECTION("bit flips: reading stops with EINVAL, every event before it is right")
    {
        for (int round = 0; round < 60; ++round) {
            auto damaged = bytes;
            size_t at = 1024 + random() % (bytes.size() - 1024);
            damaged[at] ^= uint8_t(1u << (random() % 8));
            INFO("bit flipped in byte " << at);
            file.write_bytes(damaged);
            LogGuard log(file.path());
            if (log.open_error() != 0) {
                CHECK(log.open_error() == EINVAL);
                continue;
            }
            LogRead read = read_log(log.get());
            for (size_t i = 0; i < read.events.size(); ++i)
                REQUIRE(same_event(read.events[i], all[i]));
            if (read.error == 0) // the flip hit the trailer or the footer
                CHECK(read.events.size() == all.size());
            else
                CHECK(read.error == EINVAL);
        }
    }
}

namespace {

// Where `event` is in `all`; npos if it is not.
size_t position_in(const Event &event, const std::vector<Event> &all)
{
    for (size_t at = 0; at < all.size(); ++at)
        if (same_event(event, all[at]))
            return at;
    return std::string::npos;
}

} // namespace

TEST_CASE("a log cut short reads up to the cut whatever its log policy", "[log][self-tracing]")
{
    TempFile original, file;
    Attr a;
    SECTION("the first 60% of a 16 MiB LOOP log of a FLUSH stream holds all 400 events")
    {
        REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, POSIX_TRACE_FLUSH) == 0);
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_LOOP) == 0);
        REQUIRE(posix_trace_attr_setlogsize(&a.attr, 16u << 20) == 0);
        std::vector<Event> all = write_user_event_log(original, 400, &a.attr);
        REQUIRE(user_events_of(all, user_event("log.test")).size() == 400);
        auto bytes = original.bytes();
        file.write_bytes({bytes.begin(), bytes.begin() + std::ptrdiff_t(bytes.size() * 6 / 10)});
        LogGuard log(file.path());
        REQUIRE(log.open_error() == 0);
        LogRead read = read_log(log.get());
        CHECK(read.error == 0);
        REQUIRE(read.events.size() == all.size());
        for (size_t i = 0; i < all.size(); ++i)
            REQUIRE(same_event(read.events[i], all[i]));
        posix_trace_status_info status;
        REQUIRE(posix_trace_get_status(log.get(), &status) == 0);
        CHECK(status.posix_log_overrun_status == POSIX_TRACE_NO_OVERRUN);
    }

    int policy = GENERATE(POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_APPEND);
    bool wraps = GENERATE(false, true);
    // A log of 256 KiB: LOOP slots of 64 KiB, which 2,000 events overrun.
    size_t count = wraps ? 2000 : 300;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, policy) == 0);
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, 256 * 1024) == 0);
    REQUIRE(posix_trace_attr_setmaxdatasize(&a.attr, 8192) == 0);
    std::vector<Event> all = write_user_event_log(original, count, &a.attr);
    auto bytes = original.bytes();
    std::mt19937 random(unsigned(policy * 2 + wraps));
    for (int round = 0; round < 30; ++round) {
        size_t cut = random() % bytes.size();
        INFO("policy " << policy << (wraps ? ", wrapped" : "") << ", cut at " << cut << " of "
                       << bytes.size());
        file.write_bytes({bytes.begin(), bytes.begin() + std::ptrdiff_t(cut)});
        LogGuard log(file.path());
        if (log.open_error() != 0) { // only a cut header is refused
            uint32_t header_size;
            std::memcpy(&header_size, bytes.data() + 12, sizeof header_size);
            CHECK(log.open_error() == EINVAL);
            CHECK(cut < header_size); // a header cut after its end reads as a log with no block
            continue;
        }
        LogRead read = read_log(log.get());
        CHECK(read.error == 0);
        // Events of the log, in its order (every event of the whole blocks
        // before the cut: in a log of runs, whose blocks overlap in time, a
        // block cut off may have held events older than some read).
        REQUIRE(is_in_order_within(read.events, all));
        size_t start = read.events.empty() ? 0 : position_in(read.events[0], all);
        // The slots of a wrapped LOOP log are not in time order in the file:
        // a cut may take the oldest, and what is read is the newest.
        if (!(policy == POSIX_TRACE_LOOP && wraps)) {
            // What is missing is what was cut off, and at most the block the
            // cut fell in.
            size_t missing_bytes = missing_record_bytes(read.events, all, start);
            CHECK(missing_bytes <= bytes.size() - cut + 256 * 1024);
        }
        posix_trace_status_info status;
        REQUIRE(posix_trace_get_status(log.get(), &status) == 0);
        if (policy == POSIX_TRACE_LOOP && start > 0)
            CHECK(status.posix_log_overrun_status == POSIX_TRACE_OVERRUN);
    }
}

TEST_CASE("a tracer killed while writing leaves a log whose complete blocks all read",
          "[log][self-tracing]")
{
    std::string helper = helper_path("log_writer");
    std::mt19937 random(4242);
    for (const char *policy : {"append", "loop"}) {
        for (int round = 0; round < 6; ++round) {
            TempFile file;
            {
                ChildConversation writer({helper, file.path(), policy});
                REQUIRE(writer.read_line() == "ready\n");
                usleep(useconds_t(5'000 + random() % 150'000));
            } // SIGKILL, wherever it is
            INFO(policy << " log killed in round " << round << ", " << file.size() << " bytes");
            LogGuard log(file.path());
            REQUIRE(log.open_error() == 0);
            LogRead read = read_log(log.get());
            CHECK(read.error == 0);
            char name[TRACE_EVENT_NAME_MAX];
            std::vector<uint64_t> values;
            bool loss_reported = false;
            for (const auto &event : read.events) {
                loss_reported |= event.info.posix_event_id == POSIX_TRACE_OVERFLOW;
                if (posix_trace_eventid_get_name(log.get(), event.info.posix_event_id, name) != 0 ||
                    std::string(name) != "killed.counter")
                    continue;
                REQUIRE(event.data.size() == sizeof(uint64_t));
                uint64_t value;
                std::memcpy(&value, event.data.data(), sizeof value);
                // In order; a gap only where the stream reported a loss.
                if (!values.empty() && !loss_reported)
                    REQUIRE(value == values.back() + 1);
                if (!values.empty())
                    REQUIRE(value > values.back());
                values.push_back(value);
                loss_reported = false;
            }
            CHECK(!values.empty());
            if (std::string(policy) == "append" && !values.empty())
                CHECK(values.front() == 0);
        }
    }
}

namespace {

// A tmpfs of `bytes` mounted on a fresh directory, unmounted with the object.
class SmallFileSystem {
public:
    explicit SmallFileSystem(size_t bytes)
    {
        char dir[] = "/tmp/posixtrace-fs-XXXXXX";
        REQUIRE(mkdtemp(dir));
        dir_ = dir;
        std::string options = "size=" + std::to_string(bytes);
        REQUIRE(mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) == 0);
    }
    ~SmallFileSystem()
    {
        umount2(dir_.c_str(), MNT_DETACH);
        rmdir(dir_.c_str());
    }
    std::string path(const char *name) const { return dir_ + "/" + name; }

private:
    std::string dir_;
};

// Emits `count` user events of 200 bytes each.
void emit_many(trace_id_t trid, size_t count)
{
    trace_event_id_t id = user_event("log.filler");
    REQUIRE(posix_trace_start(trid) == 0);
    std::vector<unsigned char> data(200, 0x5a);
    for (size_t i = 0; i < count; ++i)
        posix_trace_event(id, data.data(), data.size());
}

} // namespace

TEST_CASE("a log that runs out of room: ENOSPC and EFBIG", "[log][self-tracing]")
{
    SECTION("ENOSPC at creation when the device cannot hold a LOOP log")
    {
        SmallFileSystem fs(256 * 1024);
        int fd = open(fs.path("loop.log").c_str(), O_RDWR | O_CREAT, 0644);
        REQUIRE(fd >= 0);
        Attr a;
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_LOOP) == 0);
        REQUIRE(posix_trace_attr_setlogsize(&a.attr, 4u << 20) == 0);
        trace_id_t trid;
        CHECK(posix_trace_create_withlog(0, &a.attr, fd, &trid) == ENOSPC);
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_UNTIL_FULL) == 0);
        CHECK(posix_trace_create_withlog(0, &a.attr, fd, &trid) == ENOSPC);
        close(fd);
    }
    SECTION("ENOSPC from flush, the status and shutdown when the device fills")
    {
        SmallFileSystem fs(640 * 1024);
        std::string path = fs.path("append.log");
        int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
        REQUIRE(fd >= 0);
        Attr a;
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
        StreamGuard stream = make_logged_stream(fd, &a.attr);
        emit_many(stream.get(), 5000); // 1.2 MB
        REQUIRE(posix_trace_flush(stream.get()) == 0);
        posix_trace_status_info status{};
        for (int i = 0; i < 2000 && status.posix_stream_flush_error == 0; ++i) {
            usleep(1000);
            REQUIRE(posix_trace_get_status(stream.get(), &status) == 0);
        }
        CHECK(status.posix_stream_flush_error == ENOSPC);
        REQUIRE(posix_trace_get_status(stream.get(), &status) == 0);
        CHECK(status.posix_stream_flush_error == 0); // reset by reading it
        CHECK(posix_trace_flush(stream.get()) == ENOSPC);
        CHECK(stream.shutdown() == ENOSPC);
        close(fd);
        // What reached the device is still a readable log.
        LogGuard log(path);
        REQUIRE(log.open_error() == 0);
        LogRead read = read_log(log.get());
        CHECK(read.error == 0);
        CHECK(read.events.size() > 100);
    }
    SECTION("EFBIG past the file size limit, without SIGXFSZ killing the tracer")
    {
        TempFile file;
        struct rlimit saved;
        REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
        struct rlimit small = saved;
        small.rlim_cur = 128 * 1024;
        Attr a;
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
        int shutdown_error;
        {
            // The limit comes after creation: the stream's own buffer is a
            // memory file that the limit would refuse too.
            StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
            REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
            emit_many(stream.get(), 5000);
            // The write fails in the background: this flush, or the next.
            int first_flush = posix_trace_flush(stream.get());
            CHECK((first_flush == 0 || first_flush == EFBIG));
            posix_trace_status_info status = status_when(stream.get(), flush_ended);
            CHECK(status.posix_stream_flush_status == POSIX_TRACE_NOT_FLUSHING);
            CHECK(posix_trace_flush(stream.get()) == EFBIG);
            shutdown_error = stream.shutdown();
        }
        setrlimit(RLIMIT_FSIZE, &saved);
        CHECK(shutdown_error == EFBIG);
        CHECK(file.size() <= 128 * 1024);
    }
    SECTION("a pipe whose reader left: EIO, without SIGPIPE killing the tracer")
    {
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        Attr a;
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
        StreamGuard stream = make_logged_stream(fds[1], &a.attr);
        close(fds[0]);
        emit_many(stream.get(), 2000);
        CHECK(stream.shutdown() == EIO);
        close(fds[1]);
    }
}

namespace {

// Emits `count` user events of 200 bytes, 1,000 at a time, each time waiting
// until the stream has taken them (recorded or counted lost), so that they
// reach the log rather than overflow the lanes.
void emit_paced(trace_id_t trid, trace_event_id_t id, uint64_t count)
{
    REQUIRE(posix_trace_start(trid) == 0);
    std::vector<unsigned char> data(200, 0x5a);
    for (uint64_t emitted = 0; emitted < count;) {
        for (uint64_t end = std::min<uint64_t>(count, emitted + 1000); emitted < end; ++emitted)
            posix_trace_event(id, data.data(), data.size());
        posix_trace_counters counters{};
        for (int ms = 0; ms < 5000; ++ms, usleep(1000)) {
            REQUIRE(posix_trace_get_counters(trid, &counters) == 0);
            if (counters.recorded + counters.lost_in_kernel + counters.lost_in_stream >= emitted)
                break;
        }
        REQUIRE(counters.recorded + counters.lost_in_kernel + counters.lost_in_stream >= emitted);
    }
}

// Reads the stream up to its posix_trace_error event, waiting for it until
// `deadline`, then what is left: every event the stream holds.
std::vector<Event> read_through_error_event(trace_id_t trid, const timespec &deadline)
{
    std::vector<Event> events;
    std::vector<unsigned char> buffer(kReadBufferBytes);
    while (events.empty() || events.back().info.posix_event_id != POSIX_TRACE_ERROR) {
        Event event;
        size_t len = 0;
        int unavailable = -1;
        int err = posix_trace_timedgetnext_event(trid, &event.info, buffer.data(), buffer.size(),
                                                 &len, &unavailable, &deadline);
        INFO("no posix_trace_error event after " << events.size() << " events");
        REQUIRE(err == 0);
        REQUIRE(!unavailable);
        event.data.assign(buffer.begin(), buffer.begin() + std::ptrdiff_t(len));
        events.push_back(std::move(event));
    }
    std::vector<Event> rest = read_available(trid);
    events.insert(events.end(), rest.begin(), rest.end());
    return events;
}

} // namespace

TEST_CASE("a log write error: every later event is counted lost and posix_trace_error tells",
          "[log][self-tracing]")
{
    SmallFileSystem fs(4u << 20);
    std::string path = fs.path("flush.log");
    posixtrace::UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(fd);
    Attr a;
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, POSIX_TRACE_FLUSH) == 0);
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 1u << 20) == 0);
    StreamGuard stream = make_logged_stream(fd.get(), &a.attr);
    // The user events and the error event only, so that every event the
    // stream records was emitted here, or is the error event.
    trace_event_id_t filler = user_event("log.filler");
    trace_event_set_t all_others;
    REQUIRE(posix_trace_eventset_fill(&all_others, POSIX_TRACE_ALL_EVENTS) == 0);
    REQUIRE(posix_trace_eventset_del(filler, &all_others) == 0);
    REQUIRE(posix_trace_eventset_del(POSIX_TRACE_ERROR, &all_others) == 0);
    REQUIRE(posix_trace_set_filter(stream.get(), &all_others, POSIX_TRACE_SET_EVENTSET) == 0);

    constexpr uint64_t kEmitted = 100'000; // 200 bytes each: 6 times what the device holds
    emit_paced(stream.get(), filler, kEmitted);
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    status_when(stream.get(), flush_ended);
    std::vector<Event> in_stream =
        read_through_error_event(stream.get(), realtime_in(5'000'000'000));
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(stream.get(), &counters) == 0);
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    uint64_t unwritten = 0;
    REQUIRE(posix_trace_get_unwritten_events(stream.get(), &unwritten) == 0);
    CHECK(posix_trace_flush(stream.get()) == ENOSPC);
    CHECK(stream.shutdown() == ENOSPC);

    std::vector<Event> errors = user_events_of(in_stream, POSIX_TRACE_ERROR);
    REQUIRE(errors.size() == 1);
    REQUIRE(errors[0].data.size() == sizeof(posix_trace_error_data));
    posix_trace_error_data error;
    std::memcpy(&error, errors[0].data.data(), sizeof error);
    CHECK(error.error == ENOSPC);

    LogGuard log(path);
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    CHECK(read.error == 0);
    CHECK(user_events_of(read.events, filler).size() == read.events.size());
    CHECK(read.events.size() > 10'000); // the device holds about 18,000 of them
    CAPTURE(read.events.size(), in_stream.size(), counters.recorded, counters.lost_in_kernel,
            counters.lost_in_stream, unwritten);
    CHECK(unwritten > 0);
    CHECK(losses.overwritten + losses.refused + losses.late + unwritten == counters.lost_in_stream);
    CHECK(counters.recorded == read.events.size() + in_stream.size());
    CHECK(counters.recorded + counters.lost_in_kernel + counters.lost_in_stream ==
          kEmitted + errors.size());
}

namespace {

// A copy of a LOOP log whose header claims `slot_count` slots of
// `slot_size` bytes in a log of `log_size` bytes, with its CRC right.
std::vector<unsigned char> with_loop_slots(std::vector<unsigned char> log, uint32_t slot_size,
                                           uint64_t slot_count, uint64_t log_size)
{
    namespace format = posixtrace::log;
    format::store<uint32_t>(log.data() + 28, slot_size);
    format::store<uint64_t>(log.data() + 32, slot_count);
    format::store<uint64_t>(log.data() + 64, log_size);
    uint32_t header_size = format::load<uint32_t>(log.data() + 12);
    format::store<uint32_t>(log.data() + header_size - 4,
                            format::crc32_of(log.data(), header_size - 4));
    return log;
}

// `bytes` at the start of a file of `size` bytes, the rest a hole.
void write_sparse(const std::string &path, const std::vector<unsigned char> &bytes, off_t size)
{
    posixtrace::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(fd);
    REQUIRE(write(fd.get(), bytes.data(), bytes.size()) == ssize_t(bytes.size()));
    REQUIRE(ftruncate(fd.get(), size) == 0);
}

// What reading a crafted log cost, in a child killed after 10 s (a hang).
struct CraftedRead {
    int open_error;
    uint64_t bytes_read; // the log reader's preads, twice through
};

// Opens the log at `path`, reads it to the end, rewinds and reads it again.
std::optional<CraftedRead> open_and_read_twice(const std::string &path)
{
    int pipe_fds[2];
    REQUIRE(pipe2(pipe_fds, O_CLOEXEC) == 0);
    posixtrace::UniqueFd from_child(pipe_fds[0]), to_parent(pipe_fds[1]);
    std::optional<int> open_error = in_child_within(10s, [&] {
        posixtrace::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        std::optional<uint64_t> before = bytes_read_so_far();
        trace_id_t trid;
        int err = posix_trace_open(fd.get(), &trid);
        if (err == 0) {
            read_log(trid);
            posix_trace_rewind(trid);
            read_log(trid);
            posix_trace_close(trid);
        }
        std::optional<uint64_t> after = bytes_read_so_far();
        if (!before || !after)
            return 254; // nothing to hold the reader to
        uint64_t read = *after - *before;
        return write(to_parent.get(), &read, sizeof read) == sizeof read ? err : 255;
    });
    to_parent.reset();
    CraftedRead result{};
    if (!open_error || read(from_child.get(), &result.bytes_read, sizeof result.bytes_read) !=
                           ssize_t(sizeof result.bytes_read))
        return std::nullopt;
    result.open_error = *open_error;
    return result;
}

constexpr off_t kSparseLogBytes = off_t(64) << 30;
constexpr uint64_t kReadWhenRefusedAtMost = 64 * 1024;

} // namespace

TEST_CASE("a crafted LOOP log header opens or is refused without a read of what it only claims",
          "[log][hostile][self-tracing]")
{
    namespace format = posixtrace::log;
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_LOOP) == 0);
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, 1u << 20) == 0);
    TempFile original;
    std::vector<Event> all = write_user_event_log(original, 300, &a.attr);
    REQUIRE(user_events_of(all, user_event("log.test")).size() == 300);
    SmallFileSystem fs(4u << 20); // a sparse file takes no room
    std::string path = fs.path("crafted.log");

    struct Slots {
        uint32_t size;
        uint64_t count;
        uint64_t log_size;
        int open_error;
    };
    const Slots crafted[] = {
        {48, uint64_t(1) << 42, uint64_t(1) << 48, EINVAL},           // too small
        {format::kMinLoopSlotSize + 4, 2, uint64_t(1) << 20, EINVAL}, // not a multiple of 8
        {format::kMinLoopSlotSize, format::kMaxLoopSlots + 1, uint64_t(1) << 40, EINVAL},
        {format::kMinLoopSlotSize, 4, 4 * format::kMinLoopSlotSize - 8, EINVAL}, // > log size
        // The most slots a reader accepts, in a file far larger than they are.
        {format::kMinLoopSlotSize, format::kMaxLoopSlots,
         format::kMaxLoopSlots * format::kMinLoopSlotSize, 0},
    };
    for (const Slots &slots : crafted) {
        INFO("slot size " << slots.size << ", " << slots.count << " slots, log size "
                          << slots.log_size);
        write_sparse(path,
                     with_loop_slots(original.bytes(), slots.size, slots.count, slots.log_size),
                     kSparseLogBytes);
        std::optional<CraftedRead> crafted_read = open_and_read_twice(path);
        REQUIRE(crafted_read.has_value());
        CHECK(crafted_read->open_error == slots.open_error);
        // Refused, it read the header (with what the process reads of its
        // own files, a few KiB in a full suite), no index of the slots it
        // claims; opened, the index of every slot (a block header each) and
        // the file's real bytes, per pass: what the header claims beyond
        // that is never looked at.
        INFO("read " << crafted_read->bytes_read << " bytes of a log of "
                     << original.bytes().size());
        if (slots.open_error == 0) {
            CHECK(crafted_read->bytes_read <=
                  2 * (original.bytes().size() + slots.count * format::kBlockHeaderSize));
            continue;
        }
        CHECK(crafted_read->bytes_read < kReadWhenRefusedAtMost);
        cli_support::Run dump =
            cli_support::run_shell("timeout 10 " + cli_support::cli_path() + " dump " + path);
        CHECK(dump.status != 0);
        CHECK(dump.err_lines() == 1);
        CHECK(dump.err.find("not a trace log") != std::string::npos);
    }

    // The log as written still opens and reads back whole.
    write_sparse(path, original.bytes(), off_t(original.bytes().size()));
    LogGuard log(path);
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    CHECK(read.error == 0);
    REQUIRE(read.events.size() == all.size());
    for (size_t i = 0; i < all.size(); ++i)
        REQUIRE(same_event(read.events[i], all[i]));
}
