#pragma once
// posixtrace record --push URL: the recording goes to a trace log (-o FILE,
// else a spool file, removed once the server holds all of it), pushed while
// it is written (LiveLogPush) and whole after the stream's shutdown
// (LogPusher::push, which sends what the live push had not). The server
// away loses nothing: the log stays, and the message says how to push it.
#include <memory>
#include <string>

#include "util/unique_fd.hpp"

namespace posixtrace::cli {

class ClickHouseHttp;
class LogPusher;
class LiveLogPush;

class RecordPush {
public:
    // Reaches the server and creates the tables before anything is
    // recorded; fails with a one-line message.
    explicit RecordPush(const std::string &url);
    ~RecordPush();
    RecordPush(const RecordPush &) = delete;
    RecordPush &operator=(const RecordPush &) = delete;

    // The trace log of a recording without -o: a new file in $TMPDIR (or
    // /tmp), its path in `path`.
    UniqueFd open_spool(std::string &path);
    // Starts pushing the log at `path`, whose stream has written its header.
    void follow(const std::string &path);
    // After the stream's shutdown: one line on standard error; false if the
    // server does not hold the whole log.
    bool finish();

private:
    std::unique_ptr<ClickHouseHttp> server_;
    std::unique_ptr<LogPusher> pusher_;
    std::unique_ptr<LiveLogPush> live_;
    std::string path_;
    bool spool_ = false;
};

} // namespace posixtrace::cli
