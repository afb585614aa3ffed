#include "live_log_push.hpp"

#include <chrono>
#include <stdexcept>

#include "../export/event_rows.hpp"
#include "batch_sender.hpp"

namespace posixtrace::cli {
namespace {

// How often the log is looked at, and how long rows wait for more before
// they are sent: an event reaches the server a second or two after it was
// recorded, in batches the server takes whole.
constexpr auto kLookEvery = std::chrono::milliseconds(250);
constexpr auto kSendAtLeastEvery = std::chrono::seconds(1);

} // namespace

LiveLogPush::LiveLogPush(LogPusher &pusher, const std::string &log_path, size_t batch_bytes)
    : pusher_(pusher), log_(log_path), batch_bytes_(batch_bytes),
      thread_([this](std::stop_token stop) { run(stop); })
{
}

LiveLogPush::~LiveLogPush()
{
    thread_.request_stop();
}

LiveLogPush::Outcome LiveLogPush::finish()
{
    thread_.request_stop();
    if (thread_.joinable())
        thread_.join();
    return outcome_;
}

void LiveLogPush::run(std::stop_token stop)
{
    try {
        follow(stop);
    } catch (const std::exception &error) {
        outcome_.failure = error.what();
    }
}

// Until the next look, or the stop.
void LiveLogPush::pause(std::stop_token &stop)
{
    std::unique_lock lock(mutex_);
    woken_.wait_for(lock, stop, kLookEvery, [] { return false; });
}

// The log is read once more after the stop: the stream is shut down by
// then, and the log whole.
void LiveLogPush::follow(std::stop_token stop)
{
    LogDescription description = log_.description();
    if (!description.origin)
        throw std::runtime_error(log_.path() + ": the log has no stream id");
    uint64_t stored = pusher_.stored_prefix(description);
    EventRows rows(description, EventRows::Format::TabSeparated);
    BatchSender sender(
        [this](const std::string &batch, uint64_t before) { pusher_.send_events(batch, before); },
        stored);
    std::string batch;
    auto handed_at = std::chrono::steady_clock::now();
    auto hand = [&] {
        sender.hand(batch, rows.next_sequence());
        handed_at = std::chrono::steady_clock::now();
    };
    for (;;) {
        bool last = stop.stop_requested();
        int err = log_.read_all([&](const LoggedEvent &event) {
            if (rows.next_sequence() < stored) {
                rows.skip_row(event);
                return;
            }
            rows.append_row(event, batch);
            if (batch.size() >= batch_bytes_)
                hand();
        });
        if (err)
            throw std::runtime_error(read_error_message(log_.path(), err, rows.next_sequence()));
        bool due = std::chrono::steady_clock::now() - handed_at >= kSendAtLeastEvery;
        if (!batch.empty() && (last || due))
            hand();
        if (last)
            break;
        pause(stop);
    }
    outcome_.sent = sender.finish() - stored;
}

} // namespace posixtrace::cli
