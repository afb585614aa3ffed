#pragma once
// Pushes a trace log while its stream still writes it (posixtrace record
// --push): a thread of its own, on a connection of its own, reads what the
// log gained (a log in time order is read on as it grows) and sends it in
// batches, one at a time, about every second while events come. It is the
// recording's best effort: once the recording has ended, the push of the
// whole log (LogPusher::push) finds these events stored and sends the
// rest, so a failure here loses nothing, and a stop cuts its retries short.
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "../trace_log.hpp"

namespace posixtrace::cli {

class LiveLogPush {
public:
    // `log`: open on the log its stream writes, the header written.
    LiveLogPush(const std::string &url, std::unique_ptr<TraceLog> log);
    LiveLogPush(const LiveLogPush &) = delete;
    LiveLogPush &operator=(const LiveLogPush &) = delete;

    // Stops: what is being sent is sent (or given up at once), what was
    // read and not sent is left to the push of the whole log.
    void finish();

private:
    void run(std::stop_token stop);
    void follow(std::stop_token stop);

    std::string url_;
    std::unique_ptr<TraceLog> log_;
    std::jthread thread_; // last: it starts once the rest is there
};

} // namespace posixtrace::cli
