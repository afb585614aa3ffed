#pragma once
// Pushes a trace log while its stream still writes it (posixtrace record
// --push): a thread of its own reads what the log gained (a log in time
// order is read on as it grows) and sends it in batches, one at a time,
// about every second while events come. Once the recording has ended, the
// push of the whole log (LogPusher::push) finds these events stored and
// sends the rest and the stream's row, so a failure here loses nothing.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "../trace_log.hpp"
#include "log_pusher.hpp"

namespace posixtrace::cli {

class LiveLogPush {
public:
    // `log`: opened after its stream wrote the header; read by this only.
    LiveLogPush(LogPusher &pusher, const std::string &log_path, size_t batch_bytes);
    ~LiveLogPush();
    LiveLogPush(const LiveLogPush &) = delete;
    LiveLogPush &operator=(const LiveLogPush &) = delete;

    struct Outcome {
        uint64_t sent = 0;
        std::string failure; // empty: all it read was sent
    };
    // Reads to the end of what is written, sends it and stops.
    Outcome finish();

private:
    void run(std::stop_token stop);
    void follow(std::stop_token stop);
    void pause(std::stop_token &stop);

    LogPusher &pusher_;
    TraceLog log_;
    size_t batch_bytes_;
    std::mutex mutex_;
    std::condition_variable_any woken_;
    Outcome outcome_;
    std::jthread thread_; // last: it starts once the rest is there
};

} // namespace posixtrace::cli
