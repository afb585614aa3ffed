#pragma once
// posixtrace record --push URL: the recording goes to a trace log (-o FILE,
// else a spool file, removed once the server holds all of it), pushed while
// it is written (LiveLogPush) and whole after the stream's shutdown
// (LogPusher::push, which sends what the live push had not). The server
// away loses nothing: the log stays, and the message says how to push it.
// Both reads of the log go through the descriptor the stream writes, never
// its name again: a name in a directory others can write may be swapped.
#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>

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
    // A spool nothing was recorded into is removed; one that holds a
    // recording finish() did not push is kept, and said so.
    ~RecordPush();
    RecordPush(const RecordPush &) = delete;
    RecordPush &operator=(const RecordPush &) = delete;

    // The trace log of a recording without -o: a new file in $TMPDIR (or
    // /tmp), its path in `path`.
    UniqueFd open_spool(std::string &path);
    // Starts pushing the log at `path`, open on `log_fd` (kept open until
    // finish()), whose stream has written its header.
    void follow(const std::string &path, int log_fd);
    // After the stream's shutdown: one line on standard error; false if the
    // server does not hold the whole log.
    bool finish();

private:
    UniqueFd reopen_log() const;
    std::string keep_log(const std::string &why);
    void remove_spool();

    std::string url_;
    std::unique_ptr<ClickHouseHttp> server_;
    std::unique_ptr<LogPusher> pusher_;
    std::unique_ptr<LiveLogPush> live_;
    std::string path_;
    int log_fd_ = -1;
    bool spool_ = false;
    std::pair<dev_t, ino_t> spool_file_{}; // the file open_spool made
    enum class State { Empty, Recorded, Settled } state_ = State::Empty;
};

} // namespace posixtrace::cli
