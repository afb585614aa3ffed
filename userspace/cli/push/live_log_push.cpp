#include "live_log_push.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "../export/event_rows.hpp"
#include "batch_sender.hpp"
#include "clickhouse_http.hpp"
#include "log_pusher.hpp"

namespace posixtrace::cli {
namespace {

// How often the log is looked at, and how long rows wait for more before
// they are sent: an event reaches the server a second or two after it was
// recorded, in batches the server takes whole.
constexpr auto kLookEvery = std::chrono::milliseconds(250);
constexpr auto kSendAtLeastEvery = std::chrono::seconds(1);

} // namespace

LiveLogPush::LiveLogPush(const std::string &url, std::unique_ptr<TraceLog> log)
    : url_(url), log_(std::move(log)), thread_([this](std::stop_token stop) { run(stop); })
{
}

void LiveLogPush::finish()
{
    thread_.request_stop();
    if (thread_.joinable())
        thread_.join();
}

// A failure the stop did not cause is said when it happens: the recording
// may go on for long.
void LiveLogPush::run(std::stop_token stop)
{
    try {
        follow(stop);
    } catch (const std::exception &error) {
        if (!stop.stop_requested())
            std::fprintf(stderr,
                         "posixtrace: push: the live push stopped: %s; the trace log keeps "
                         "every event for the push at the end\n",
                         error.what());
    }
}

void LiveLogPush::follow(std::stop_token stop)
{
    ClickHouseHttp server(url_);
    LogPusher pusher(server, PushOptions{}, stop);
    LogDescription description = log_->description();
    if (!description.origin)
        throw std::runtime_error(log_->path() + ": the log has no stream id");
    uint64_t stored = pusher.stored_prefix(description);
    EventRows rows(description, EventRows::Format::Utf8Text);
    EventBlock block = pusher.event_block(description);
    BatchSender sender(
        [&pusher](const std::string &batch, uint64_t before) { pusher.send_events(batch, before); },
        stored);
    std::string batch;
    auto handed_at = std::chrono::steady_clock::now();
    auto hand = [&] {
        block.finish(batch);
        sender.hand(batch, rows.next_sequence());
        handed_at = std::chrono::steady_clock::now();
    };
    while (!stop.stop_requested()) {
        int err = log_->read_all([&](const LoggedEvent &event) {
            if (rows.next_sequence() < stored) {
                rows.skip_row(event);
                return;
            }
            block.append(rows.row(event));
            if (block.value_bytes() >= PushOptions{}.batch_bytes)
                hand();
        });
        if (err)
            throw std::runtime_error(read_error_message(log_->path(), err, rows.next_sequence()));
        if (block.rows() && std::chrono::steady_clock::now() - handed_at >= kSendAtLeastEvery)
            hand();
        wait_unless_stopped(stop, kLookEvery);
    }
    sender.finish();
}

} // namespace posixtrace::cli
