// Helpers of the trace log tests: temporary log files, opening and reading
// a log back, a self-traced stream with a log.
#pragma once
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <trace.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace test_support {

// A file in /tmp, removed with the object.
class TempFile {
public:
    TempFile()
    {
        char name[] = "/tmp/posixtrace-log-XXXXXX";
        fd_ = mkstemp(name);
        REQUIRE(fd_ >= 0);
        path_ = name;
    }
    ~TempFile()
    {
        if (fd_ >= 0)
            close(fd_);
        unlink(path_.c_str());
    }
    int fd() const { return fd_; }
    const std::string &path() const { return path_; }
    std::vector<unsigned char> bytes() const
    {
        std::vector<unsigned char> all;
        FILE *file = fopen(path_.c_str(), "rb");
        REQUIRE(file);
        unsigned char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, file)) > 0)
            all.insert(all.end(), chunk, chunk + n);
        fclose(file);
        return all;
    }
    void write_bytes(const std::vector<unsigned char> &bytes) const
    {
        FILE *file = fopen(path_.c_str(), "wb");
        REQUIRE(file);
        REQUIRE(fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size());
        fclose(file);
    }
    off_t size() const
    {
        struct stat st;
        REQUIRE(stat(path_.c_str(), &st) == 0);
        return st.st_size;
    }

private:
    int fd_ = -1;
    std::string path_;
};

class LogGuard {
public:
    explicit LogGuard(const std::string &path)
    {
        fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(fd_ >= 0);
        open_error_ = posix_trace_open(fd_, &trid_);
    }
    ~LogGuard()
    {
        if (open_error_ == 0)
            posix_trace_close(trid_);
        close(fd_);
    }
    int open_error() const { return open_error_; }
    trace_id_t get() const { return trid_; }

private:
    int fd_ = -1;
    int open_error_ = -1;
    trace_id_t trid_ = 0;
};

struct LogRead {
    std::vector<Event> events;
    int error = 0; // what ended the reading: 0 the end of the log
};

inline LogRead read_log(trace_id_t trid, bool skip_thread_events = true)
{
    LogRead result;
    std::vector<unsigned char> buffer(kReadBufferBytes);
    for (;;) {
        Event event;
        size_t len = 0;
        int unavailable = -1;
        result.error = posix_trace_getnext_event(trid, &event.info, buffer.data(), buffer.size(),
                                                 &len, &unavailable);
        if (result.error || unavailable)
            break;
        if (skip_thread_events && is_thread_event(event.info.posix_event_id))
            continue;
        event.data.assign(buffer.begin(), buffer.begin() + std::ptrdiff_t(len));
        result.events.push_back(std::move(event));
    }
    return result;
}

// The status a closed log holds.
inline posix_trace_status_info status_of_log(const std::string &path)
{
    LogGuard log(path);
    REQUIRE(log.open_error() == 0);
    posix_trace_status_info status;
    REQUIRE(posix_trace_get_status(log.get(), &status) == 0);
    return status;
}

// A stream of this process with a log on `fd`; thread events filtered out.
inline StreamGuard make_logged_stream(int fd, trace_attr_t *attr)
{
    trace_id_t trid = 0;
    int err = posix_trace_create_withlog(0, attr, fd, &trid);
    INFO("posix_trace_create_withlog: " << err << " (" << std::strerror(err) << ")");
    REQUIRE(err == 0);
    StreamGuard guard(trid);
    filter_thread_events(trid);
    return guard;
}

inline std::vector<Event> user_events_of(const std::vector<Event> &events, trace_event_id_t id)
{
    std::vector<Event> found;
    for (const auto &event : events)
        if (event.info.posix_event_id == id)
            found.push_back(event);
    return found;
}

// Reads the stream's status every millisecond until `done(status)`, for at
// most 5 s, and returns the last one read. Each read resets the overrun
// statuses: `seen` is shown every status read on the way.
inline posix_trace_status_info
status_when(trace_id_t trid, const std::function<bool(const posix_trace_status_info &)> &done,
            const std::function<void(const posix_trace_status_info &)> &seen = {})
{
    posix_trace_status_info status{};
    for (int i = 0; i < 5000; ++i) {
        REQUIRE(posix_trace_get_status(trid, &status) == 0);
        if (seen)
            seen(status);
        if (done(status))
            break;
        usleep(1000);
    }
    return status;
}

inline bool flush_ended(const posix_trace_status_info &status)
{
    return status.posix_stream_flush_status == POSIX_TRACE_NOT_FLUSHING;
}

// Payload number i: its own length (0 … 8192 over the run) and bytes.
inline std::vector<unsigned char> numbered_payload(size_t i)
{
    size_t length = (i * 37) % 300;
    if (i % 97 == 0)
        length = 8192;
    std::vector<unsigned char> bytes(length);
    for (size_t k = 0; k < length; ++k)
        bytes[k] = (unsigned char)(i * 31 + k);
    return bytes;
}

inline bool same_event(const Event &a, const Event &b)
{
    return a.info.posix_event_id == b.info.posix_event_id && a.info.posix_pid == b.info.posix_pid &&
           a.info.posix_tid == b.info.posix_tid &&
           a.info.posix_thread_id == b.info.posix_thread_id &&
           a.info.posix_prog_address == b.info.posix_prog_address &&
           a.info.posix_timestamp.tv_sec == b.info.posix_timestamp.tv_sec &&
           a.info.posix_timestamp.tv_nsec == b.info.posix_timestamp.tv_nsec &&
           a.info.posix_truncation_status == b.info.posix_truncation_status && a.data == b.data;
}

// Writes a closed log of `count` user events "log.test" (numbered_payload(i)) and
// returns the events as read back.
inline std::vector<Event> write_user_event_log(const TempFile &file, size_t count,
                                               trace_attr_t *attr)
{
    StreamGuard stream = make_logged_stream(file.fd(), attr);
    trace_event_id_t id = user_event("log.test");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    for (size_t i = 0; i < count; ++i) {
        auto bytes = numbered_payload(i);
        posix_trace_event(id, bytes.data(), bytes.size());
    }
    REQUIRE(stream.shutdown() == 0);
    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    REQUIRE(read.error == 0);
    return read.events;
}

} // namespace test_support
