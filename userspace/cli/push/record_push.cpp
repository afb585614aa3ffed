#include "record_push.hpp"

#include <fcntl.h>
#include <stdlib.h>
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

RecordPush::RecordPush(const std::string &url)
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

RecordPush::~RecordPush() = default;

UniqueFd RecordPush::open_spool(std::string &path)
{
    const char *directory = getenv("TMPDIR");
    std::string pattern = std::string(directory && *directory ? directory : "/tmp") +
                          "/posixtrace-record-XXXXXX.ptlog";
    int fd = mkostemps(pattern.data(), 6, O_CLOEXEC);
    if (fd < 0)
        fail("--push: cannot make a trace log in " + pattern + ": " + std::strerror(errno));
    path = path_ = pattern;
    spool_ = true;
    return UniqueFd(fd);
}

void RecordPush::follow(const std::string &path)
{
    path_ = path;
    live_ = std::make_unique<LiveLogPush>(*pusher_, path, PushOptions{}.batch_bytes);
}

bool RecordPush::finish()
{
    LiveLogPush::Outcome live = live_ ? live_->finish() : LiveLogPush::Outcome{};
    live_.reset();
    std::string line;
    bool whole = false;
    try {
        TraceLog log(path_);
        ReadTally tally;
        int read_error = 0;
        PushOutcome outcome = pusher_->push(log, tally, read_error);
        whole = read_error == 0;
        line = whole ? std::to_string(outcome.events) + " events in " + server_->url() + ", " +
                           std::to_string(live.sent) + " of them sent while recording"
                     : read_error_message(path_, read_error, tally.events());
    } catch (const std::exception &error) {
        line = error.what();
    }
    if (!live.failure.empty())
        line += whole ? " (the live push had stopped: " + live.failure + ")"
                      : "; the live push had stopped: " + live.failure;
    if (!whole)
        line += "; the trace log is kept in " + path_ + ": push it with posixtrace push " +
                "--clickhouse " + server_->url() + " " + path_;
    else if (spool_)
        unlink(path_.c_str());
    std::fprintf(stderr, "posixtrace: push: %s\n", line.c_str());
    return whole;
}

} // namespace posixtrace::cli
