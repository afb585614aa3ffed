#pragma once
// Ships the events of trace logs into the tables of the installed schema,
// over ClickHouse's HTTP interface: in batches of bounded size, each sent
// again while the server cannot take it, and from where an earlier push of
// the same stream stopped, so pushing a log twice adds nothing.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

#include "../logged_event.hpp"
#include "../read_progress.hpp"
#include "../trace_log.hpp"
#include "clickhouse_http.hpp"
#include "event_block.hpp"

namespace posixtrace::cli {

// Waits `wait`, or less if a stop comes meanwhile (a default token never
// stops); false if it came.
bool wait_unless_stopped(const std::stop_token &stop, std::chrono::milliseconds wait);

struct PushOptions {
    unsigned retries = 5; // sent again this many times at most, waiting 0.25 s, 0.5 s, ...
    size_t batch_bytes = 64u << 20; // of the columns' values
    // A log without its trailer (cut short, or its stream still running) is
    // pushed only when the user says its writer is gone: a log still written
    // may number its events differently at the next read (a LOOP log wraps,
    // a version 2 log's later blocks hold older events), and the push's
    // resumption relies on the numbering.
    bool incomplete = false;
};

// What one push of a log did.
struct PushOutcome {
    uint64_t events = 0;         // the log's
    uint64_t already_stored = 0; // by an earlier push: not sent again
    uint64_t sent = 0;
};

// A push that stopped: what the server said, and how many of the log's
// events it holds (earlier pushes' and this one's), if that is known;
// `retryable`: pushing again later may succeed. The log is untouched.
class PushFailure : public std::runtime_error {
public:
    PushFailure(const std::string &what, std::optional<uint64_t> stored, bool retryable)
        : std::runtime_error(what), stored(stored), retryable(retryable)
    {
    }
    std::optional<uint64_t> stored;
    bool retryable;
};

class LogPusher {
public:
    // `stop`: a stop requested there ends the wait before a batch is sent
    // again, and the push fails at once.
    LogPusher(ClickHouseHttp &server, PushOptions options, std::stop_token stop = {})
        : server_(server), options_(options), stop_(std::move(stop))
    {
    }

    // Creates the database and tables where missing. Throws PushFailure.
    void create_tables();
    // Pushes every event of `log` (read to its end, or to its first damaged
    // block: then the events before it are pushed and `read_error` is the
    // error), then the log's row of the streams table. Throws PushFailure,
    // and std::runtime_error for a log without an origin (nothing to key
    // it), or without its trailer unless options say so.
    PushOutcome push(TraceLog &log, ReadTally &tally, int &read_error);

    // The pieces of a push for a log still being written (LiveLogPush).
    // How many of the stream's first events the server holds.
    uint64_t stored_prefix(const LogDescription &description);
    // A block for the stream's rows, as the server's table keeps them.
    EventBlock event_block(const LogDescription &description);
    // Inserts a finished EventBlock of this pusher's; `stored`: what the
    // server holds of the stream before it. Throws PushFailure.
    void send_events(const std::string &block, uint64_t stored);

private:
    struct StreamTally;
    std::string send(const std::string &query, const std::string &data,
                     std::optional<uint64_t> stored);
    std::string stream_row(const LogDescription &description, const StreamTally &tally) const;
    bool has_event_column(const std::string &name);
    void add_missing_columns();
    EventBlock::Payload payload();

    ClickHouseHttp &server_;
    PushOptions options_;
    std::stop_token stop_;
    std::optional<EventBlock::Payload> payload_; // asked once
};

} // namespace posixtrace::cli
