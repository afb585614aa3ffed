// posix_trace_get_origin: where and when a stream was recorded, from the
// stream and from its log; logs without one, and logs that claim one and
// cut it.
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <sched.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "attributes/trace_origin.hpp"
#include "log/log_format.hpp"
#include "log_support.hpp"
#include "test_support.hpp"

using namespace test_support;
namespace format = posixtrace::log;

namespace {

posix_trace_origin origin_of(trace_id_t trid)
{
    posix_trace_origin origin;
    std::memset(&origin, 0x5a, sizeof origin);
    REQUIRE(posix_trace_get_origin(trid, &origin) == 0);
    return origin;
}

std::string boot_id_text()
{
    std::ifstream file("/proc/sys/kernel/random/boot_id");
    std::string text;
    std::getline(file, text);
    return text;
}

bool same_origin(const posix_trace_origin &a, const posix_trace_origin &b)
{
    return std::strcmp(a.host_name, b.host_name) == 0 &&
           std::memcmp(a.boot_id, b.boot_id, 16) == 0 &&
           std::memcmp(a.stream_id, b.stream_id, 16) == 0 &&
           a.realtime_offset_ns == b.realtime_offset_ns;
}

// The origin its stream gave a log written to `file`, read back from the stream.
posix_trace_origin write_log(const TempFile &file)
{
    Attr attr;
    StreamGuard stream = make_logged_stream(file.fd(), attr.get());
    posix_trace_origin origin = origin_of(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    posix_trace_event(POSIX_TRACE_UNNAMED_USEREVENT, "x", 1);
    REQUIRE(stream.shutdown() == 0);
    return origin;
}

void fix_header_crc(std::vector<unsigned char> &log)
{
    uint32_t header_size = format::load<uint32_t>(log.data() + 12);
    format::store<uint32_t>(log.data() + header_size - 4,
                            format::crc32_of(log.data(), header_size - 4));
}

int open_error_of(const std::vector<unsigned char> &bytes)
{
    TempFile copy;
    copy.write_bytes(bytes);
    LogGuard log(copy.path());
    return log.open_error();
}

} // namespace

TEST_CASE("origin: an active stream tells its host, its boot, an id of its own and its clock",
          "[origin][self-tracing]")
{
    StreamGuard first = make_stream();
    StreamGuard second = make_stream();
    posix_trace_origin one = origin_of(first.get());
    posix_trace_origin other = origin_of(second.get());

    utsname host;
    REQUIRE(uname(&host) == 0);
    CHECK(std::string(one.host_name) == host.nodename);
    uint8_t boot[16];
    REQUIRE(posixtrace::parse_uuid(boot_id_text(), boot));
    CHECK(std::memcmp(one.boot_id, boot, 16) == 0);
    CHECK(std::memcmp(one.stream_id, other.stream_id, 16) != 0);
    CHECK((one.stream_id[6] >> 4) == 4); // a random UUID, as engines parse them
    CHECK((one.stream_id[8] >> 6) == 2);

    timespec real, mono;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t offset_now = (int64_t(real.tv_sec) - int64_t(mono.tv_sec)) * 1'000'000'000 +
                         (real.tv_nsec - mono.tv_nsec);
    CHECK(std::llabs(one.realtime_offset_ns - offset_now) < 1'000'000'000);
}

TEST_CASE("origin: EINVAL for a NULL origin and for a stream shut down", "[origin][self-tracing]")
{
    StreamGuard stream = make_stream();
    CHECK(posix_trace_get_origin(stream.get(), nullptr) == EINVAL);
    trace_id_t gone = stream.get();
    REQUIRE(stream.shutdown() == 0);
    posix_trace_origin origin;
    CHECK(posix_trace_get_origin(gone, &origin) == EINVAL);
}

TEST_CASE("origin: a log keeps its stream's origin, and its counters", "[origin][log][self-tracing]")
{
    TempFile file;
    posix_trace_origin written = write_log(file);
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    CHECK(same_origin(origin_of(log.get()), written));
    CHECK(posix_trace_get_origin(log.get(), nullptr) == EINVAL);
    // And the counters its stream's shutdown wrote: start, the event, stop.
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(log.get(), &counters) == 0);
    CHECK(counters.recorded >= 3);
    CHECK(counters.lost_in_kernel + counters.lost_in_stream == 0);
    CHECK(posix_trace_get_counters(log.get(), nullptr) == EINVAL);
}

TEST_CASE("origin: a log of minor version 0 has none; a log that cuts its origin is refused",
          "[origin][log][self-tracing]")
{
    TempFile file;
    write_log(file);
    std::vector<unsigned char> bytes = file.bytes();
    REQUIRE(format::load<uint16_t>(bytes.data() + 10) == format::kMinorVersionWithOrigin);

    SECTION("minor version 0: the log reads, without an origin")
    {
        std::vector<unsigned char> older = bytes;
        format::store<uint16_t>(older.data() + 10, 0);
        fix_header_crc(older);
        TempFile copy;
        copy.write_bytes(older);
        LogGuard log(copy.path());
        REQUIRE(log.open_error() == 0);
        posix_trace_origin origin;
        CHECK(posix_trace_get_origin(log.get(), &origin) == ENODATA);
        CHECK(read_log(log.get()).events.size() >= 1);
    }
    SECTION("minor version 1 with the origin cut from the header: EINVAL")
    {
        std::vector<unsigned char> cut = bytes;
        uint32_t header_size = format::load<uint32_t>(cut.data() + 12);
        for (size_t missing : {format::kOriginSize, size_t(1)}) {
            std::vector<unsigned char> shorter = cut;
            uint32_t smaller = uint32_t(header_size - missing);
            shorter.erase(shorter.begin() + std::ptrdiff_t(smaller - 4),
                          shorter.begin() + std::ptrdiff_t(header_size - 4));
            shorter.insert(shorter.begin() + std::ptrdiff_t(smaller), missing,
                           0); // blocks stay put
            format::store<uint32_t>(shorter.data() + 12, smaller);
            fix_header_crc(shorter);
            INFO("bytes missing: " << missing);
            CHECK(open_error_of(shorter) == EINVAL);
        }
    }
    SECTION("a host name with no NUL in its field: the first 64 bytes, terminated")
    {
        std::vector<unsigned char> unterminated = bytes;
        uint32_t header_size = format::load<uint32_t>(unterminated.data() + 12);
        size_t at = header_size - 4 - format::kOriginSize;
        std::memset(unterminated.data() + at, 'A', format::kOriginHostNameBytes);
        fix_header_crc(unterminated);
        TempFile copy;
        copy.write_bytes(unterminated);
        LogGuard log(copy.path());
        REQUIRE(log.open_error() == 0);
        CHECK(std::string(origin_of(log.get()).host_name) == std::string(64, 'A'));
    }
}

TEST_CASE("origin: the host name is the one of the creator's UTS namespace, whatever its bytes",
          "[origin][log][self-tracing]")
{
    static const char kHostile[] = "evil\n\"host\\\x01\xff";
    TempFile file;
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) { // a namespace of its own: the test's host keeps its name
        if (unshare(CLONE_NEWUTS) != 0 || sethostname(kHostile, sizeof kHostile - 1) != 0)
            _exit(2);
        trace_id_t trid;
        trace_attr_t attr;
        posix_trace_attr_init(&attr);
        if (posix_trace_create_withlog(0, &attr, file.fd(), &trid) != 0)
            _exit(3);
        _exit(posix_trace_shutdown(trid) == 0 ? 0 : 4);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    CHECK(std::string(origin_of(log.get()).host_name) == kHostile);
}
