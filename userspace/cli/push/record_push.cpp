#include "record_push.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "../target.hpp"
#include "../trace_log.hpp"
#include "clickhouse_http.hpp"
#include "live_log_push.hpp"
#include "log_pusher.hpp"

namespace posixtrace::cli {

RecordPush::RecordPush(const std::string &url) : url_(url)
{
    try {
        server_ = std::make_unique<ClickHouseHttp>(url);
    } catch (const std::exception &error) {
        fail("--push: " + std::string(error.what()));
    }
    pusher_ = std::make_unique<LogPusher>(*server_, PushOptions{});
    try {
        pusher_->create_tables();
    } catch (const PushFailure &failure) {
        fail("--push: " + std::string(failure.what()) + "; nothing was recorded");
    }
}

RecordPush::~RecordPush()
{
    live_.reset();
    if (state_ == State::Empty && spool_)
        remove_spool();
    else if (state_ == State::Recorded)
        std::fprintf(stderr, "posixtrace: push: %s\n", keep_log("the recording failed").c_str());
}

UniqueFd RecordPush::open_spool(std::string &path)
{
    const char *directory = getenv("TMPDIR");
    std::string pattern = std::string(directory && *directory ? directory : "/tmp") +
                          "/posixtrace-record-XXXXXX.ptlog";
    int fd = mkostemps(pattern.data(), 6, O_CLOEXEC);
    if (fd < 0)
        fail("--push: cannot make a trace log in " + pattern + ": " + std::strerror(errno));
    path = path_ = pattern;
    log_fd_ = fd;
    struct stat created;
    spool_ = fstat(fd, &created) == 0;
    spool_file_ = {created.st_dev, created.st_ino};
    return UniqueFd(fd);
}

UniqueFd RecordPush::reopen_log() const
{
    UniqueFd fd(open(("/proc/self/fd/" + std::to_string(log_fd_)).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        throw std::runtime_error(path_ + ": cannot read it back: " + std::strerror(errno));
    return fd;
}

void RecordPush::follow(const std::string &path, int log_fd)
{
    path_ = path;
    log_fd_ = log_fd;
    state_ = State::Recorded;
    live_ = std::make_unique<LiveLogPush>(url_, std::make_unique<TraceLog>(path, reopen_log()));
}

std::string RecordPush::keep_log(const std::string &why)
{
    state_ = State::Settled;
    return why + "; the trace log is kept in " + path_ + ": push it with posixtrace push " +
           "--clickhouse " + server_->url() + " " + path_;
}

// Only the file the recording wrote: a name swapped meanwhile stays.
void RecordPush::remove_spool()
{
    struct stat named;
    if (stat(path_.c_str(), &named) == 0 && named.st_dev == spool_file_.first &&
        named.st_ino == spool_file_.second)
        unlink(path_.c_str());
}

bool RecordPush::finish()
{
    live_->finish();
    live_.reset();
    std::string line;
    bool whole = false;
    try {
        TraceLog log(path_, reopen_log());
        ReadTally tally;
        int read_error = 0;
        PushOutcome outcome = pusher_->push(log, tally, read_error);
        whole = read_error == 0;
        line = whole ? std::to_string(outcome.events) + " events in " + server_->url() + ", " +
                           std::to_string(outcome.already_stored) + " of them sent while recording"
                     : read_error_message(path_, read_error, tally.events());
    } catch (const std::exception &error) {
        line = error.what();
    }
    if (!whole)
        line = keep_log(line);
    else if (spool_)
        remove_spool();
    state_ = State::Settled;
    std::fprintf(stderr, "posixtrace: push: %s\n", line.c_str());
    return whole;
}

} // namespace posixtrace::cli
