#include "log_pusher.hpp"

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "../event_format.hpp"
#include "../export/event_rows.hpp"
#include "../safe_text.hpp"
#include "attributes/trace_origin.hpp"
#include "batch_sender.hpp"
#include "clickhouse_schema.hpp"
#include "util/clock.hpp"

namespace posixtrace::cli {
namespace {

const char *const kInsertStream = "INSERT INTO posixtrace.streams FORMAT JSONEachRow";

std::string member(const char *key, const std::string &json_value)
{
    return std::string(",\"") + key + "\":" + json_value;
}

} // namespace

// What the streams table says of a log, gathered as its events go by.
struct LogPusher::StreamTally {
    uint64_t events = 0;
    uint64_t first_ns = 0, last_ns = 0;
    uint64_t overflow_events = 0;
    posix_trace_overflow_data lost{};

    void add(const LoggedEvent &event)
    {
        uint64_t ns = timestamp_ns(event.info);
        first_ns = events++ ? first_ns : ns;
        last_ns = ns;
        posix_trace_overflow_data overflow;
        if (event.info.posix_event_id != POSIX_TRACE_OVERFLOW || event.length < sizeof overflow)
            return;
        std::memcpy(&overflow, event.data, sizeof overflow);
        ++overflow_events;
        lost.lost += overflow.lost;
        lost.lost_in_kernel += overflow.lost_in_kernel;
        lost.lost_in_stream += overflow.lost_in_stream;
    }
};

bool wait_unless_stopped(const std::stop_token &stop, std::chrono::milliseconds wait)
{
    std::mutex mutex;
    std::condition_variable_any stopped;
    std::unique_lock lock(mutex);
    return !stopped.wait_for(lock, stop, wait, [&stop] { return stop.stop_requested(); });
}

// Sent again while the server cannot take it.
std::string LogPusher::send(const std::string &query, const std::string &data,
                            std::optional<uint64_t> stored)
{
    for (unsigned attempt = 0;; ++attempt) {
        try {
            return server_.post(query, data);
        } catch (const HttpFailure &failure) {
            // 0.25 s, 0.5 s, 1 s ...
            auto wait = std::chrono::milliseconds(250L << std::min(attempt, 6u));
            if (!failure.retryable() || attempt >= options_.retries ||
                !wait_unless_stopped(stop_, wait))
                throw PushFailure(server_.url() + ": " + failure.what(), stored,
                                  failure.retryable());
        }
    }
}

void LogPusher::send_events(const std::string &block, uint64_t stored)
{
    send(EventBlock::insert_query(payload()), block, stored);
}

// A table made before the payload was kept as bytes keeps data_hex as
// text of its own.
EventBlock::Payload LogPusher::payload()
{
    if (!payload_)
        payload_ = send("SELECT count() FROM system.columns WHERE database = 'posixtrace' AND "
                        "table = 'events' AND name = 'data_hex' AND default_kind = 'ALIAS' "
                        "FORMAT TabSeparated",
                        "", std::nullopt) == "1\n"
                       ? EventBlock::Payload::Bytes
                       : EventBlock::Payload::Hex;
    return *payload_;
}

EventBlock LogPusher::event_block(const LogDescription &description)
{
    return EventBlock(description, payload());
}

void LogPusher::create_tables()
{
    for (const std::string &statement : clickhouse_schema_statements())
        send(statement, "", std::nullopt);
    add_missing_columns();
}

namespace {

// Columns the events table gained after its first release, as the schema
// declares them: a table an earlier push made gets them (Debian's server
// knows no ADD COLUMN IF NOT EXISTS).
struct AddedColumn {
    const char *name;
    const char *type;
};
constexpr AddedColumn kAddedEventColumns[] = {{"process.vpid", "Int32 DEFAULT 0"},
                                              {"thread.vtid", "Int32 DEFAULT 0"}};

} // namespace

bool LogPusher::has_event_column(const std::string &name)
{
    return send("SELECT count() FROM system.columns WHERE database = 'posixtrace' AND "
                "table = 'events' AND name = '" +
                    name + "' FORMAT TabSeparated",
                "", std::nullopt) == "1\n";
}

void LogPusher::add_missing_columns()
{
    for (const AddedColumn &column : kAddedEventColumns) {
        if (has_event_column(column.name))
            continue;
        try {
            send(std::string("ALTER TABLE posixtrace.events ADD COLUMN `") + column.name + "` " +
                     column.type,
                 "", std::nullopt);
        } catch (const PushFailure &) {
            if (!has_event_column(column.name)) // not another push's meanwhile
                throw;
        }
    }
}

// How many of the stream's first events the server holds, each once or
// more; 0 if what it holds has a hole (a push stopped between batches that
// went in out of order): all are sent again, and the copies merge away.
// The host is in the query so that the table's order (host first) finds
// the stream's rows without reading the fleet's; as hex, whatever its bytes.
uint64_t LogPusher::stored_prefix(const LogDescription &description)
{
    const posix_trace_origin &origin = *description.origin;
    std::string host = valid_utf8(origin.host_name);
    std::string host_hex =
        hex_text(reinterpret_cast<const unsigned char *>(host.data()), host.size());
    std::string answer = send("SELECT uniqExact(sequence), max(sequence) FROM posixtrace.events "
                              "WHERE `host.name` = unhex('" +
                                  host_hex + "') AND `stream.id` = toUUID('" +
                                  uuid_text(origin.stream_id) + "') FORMAT TabSeparated",
                              "", std::nullopt);
    uint64_t distinct = 0, largest = 0;
    const char *at = answer.data(), *end = answer.data() + answer.size();
    auto number = [&](uint64_t &value, char after) {
        auto parsed = std::from_chars(at, end, value);
        bool ok = parsed.ec == std::errc() && parsed.ptr < end && *parsed.ptr == after;
        at = parsed.ptr + 1;
        return ok;
    };
    if (!number(distinct, '\t') || !number(largest, '\n') || at != end)
        throw PushFailure(server_.url() + ": an answer that is not two numbers: " +
                              terminal_text(answer.substr(0, 80)),
                          std::nullopt, false);
    return distinct && distinct == largest + 1 ? distinct : 0;
}

std::string LogPusher::stream_row(const LogDescription &description, const StreamTally &tally) const
{
    const posix_trace_origin &origin = *description.origin;
    std::string row = "{\"stream.id\":\"" + uuid_text(origin.stream_id) + "\"";
    row += member("stream.name", json_string(description.trace_name));
    row += member("host.name", json_string(origin.host_name));
    row += member("host.boot_id", "\"" + uuid_text(origin.boot_id) + "\"");
    row += member("created_unix_nano", std::to_string(to_nanos(description.creation_time)));
    row += member("realtime_offset_ns", std::to_string(origin.realtime_offset_ns));
    row += member("events", std::to_string(tally.events));
    row += member("first_unix_nano", std::to_string(tally.first_ns));
    row += member("last_unix_nano", std::to_string(tally.last_ns));
    row += member("overflow_events", std::to_string(tally.overflow_events));
    row += member("lost", std::to_string(tally.lost.lost));
    row += member("lost_in_kernel", std::to_string(tally.lost.lost_in_kernel));
    row += member("lost_in_stream", std::to_string(tally.lost.lost_in_stream));
    row += member("pushed_unix_nano", std::to_string(clock_nanos(CLOCK_REALTIME)));
    return row + "}\n";
}

PushOutcome LogPusher::push(TraceLog &log, ReadTally &tally, int &read_error)
{
    LogDescription description = log.description();
    if (!description.origin)
        throw std::runtime_error(log.path() +
                                 ": the log has no stream id (its writer kept none), so a "
                                 "push could not tell it apart; export it with --format jsonl");
    posix_trace_counters final_counters;
    if (!options_.incomplete && posix_trace_get_counters(log.trid(), &final_counters) != 0)
        throw std::runtime_error(log.path() +
                                 ": the log does not end with its stream's shutdown (cut short, "
                                 "or its stream still running); once its writer is gone, push it "
                                 "with --incomplete");
    PushOutcome outcome;
    outcome.already_stored = stored_prefix(description);
    EventRows rows(description, EventRows::Format::Utf8Text);
    EventBlock block = event_block(description);
    StreamTally stream;
    std::string batch;
    BatchSender sender([this](const std::string &rows_of_batch,
                              uint64_t stored) { send_events(rows_of_batch, stored); },
                       outcome.already_stored);
    auto flush = [&] {
        block.finish(batch);
        sender.hand(batch, rows.next_sequence());
    };
    read_error = log.read_all(tally, [&](const LoggedEvent &event) {
        stream.add(event);
        // Every event makes a row: the rows number the events and name the threads.
        if (rows.next_sequence() < outcome.already_stored) {
            rows.skip_row(event);
            return;
        }
        block.append(rows.row(event));
        ++outcome.sent;
        if (block.value_bytes() >= options_.batch_bytes)
            flush();
    });
    if (block.rows())
        flush();
    uint64_t stored = sender.finish();
    outcome.events = stream.events;
    if (outcome.already_stored > outcome.events) // another stream under the same id
        throw PushFailure(server_.url() + ": it holds " + std::to_string(outcome.already_stored) +
                              " events of the stream " + uuid_text(description.origin->stream_id) +
                              ", the log " + std::to_string(outcome.events) +
                              ": they are not the same stream's",
                          outcome.already_stored, false);
    send(kInsertStream, stream_row(description, stream), stored);
    return outcome;
}

} // namespace posixtrace::cli
