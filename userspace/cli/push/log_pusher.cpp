#include "log_pusher.hpp"

#include <cstring>
#include <sstream>
#include <thread>

#include "../export/event_rows.hpp"
#include "../safe_text.hpp"
#include "attributes/trace_origin.hpp"
#include "clickhouse_schema.hpp"
#include "util/clock.hpp"

namespace posixtrace::cli {
namespace {

const char *const kInsertEvents = "INSERT INTO posixtrace.events FORMAT JSONEachRow";
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

// Sent again after 0.25 s, 0.5 s, 1 s ... while the server cannot take it.
std::string LogPusher::send(const std::string &query, const std::string &data, uint64_t stored)
{
    for (unsigned attempt = 0;; ++attempt) {
        try {
            return server_.post(query, data);
        } catch (const HttpFailure &failure) {
            if (!failure.retryable() || attempt >= options_.retries)
                throw PushFailure(server_.url() + ": " + failure.what(), stored);
            std::this_thread::sleep_for(std::chrono::milliseconds(250L << std::min(attempt, 6u)));
        }
    }
}

void LogPusher::create_tables()
{
    for (const std::string &statement : clickhouse_schema_statements())
        send(statement, "", 0);
}

// How many of the stream's first events the server holds, each once or
// more; 0 if what it holds has a hole (a push stopped between batches that
// went in out of order): all are sent again, and the copies merge away.
uint64_t LogPusher::stored_prefix(const std::string &stream_id, uint64_t stored)
{
    std::string answer = send("SELECT uniqExact(sequence), max(sequence) FROM posixtrace.events "
                              "WHERE `stream.id` = toUUID('" +
                                  stream_id + "') FORMAT TabSeparated",
                              "", stored);
    std::istringstream fields(answer);
    uint64_t distinct = 0, largest = 0;
    if (!(fields >> distinct >> largest))
        throw PushFailure(server_.url() + ": an answer that is not two numbers", stored);
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
    PushOutcome outcome;
    outcome.already_stored = stored_prefix(uuid_text(description.origin->stream_id), 0);
    uint64_t stored = outcome.already_stored;
    EventRows rows(description, EventRows::Fields::Text);
    StreamTally stream;
    std::string batch;
    auto flush = [&] {
        send(kInsertEvents, batch, stored);
        stored = rows.next_sequence();
        batch.clear();
    };
    read_error = log.read_all(tally, [&](const LoggedEvent &event) {
        stream.add(event);
        bool sent_before = rows.next_sequence() < outcome.already_stored;
        std::string row = rows.row(event); // for every event: it numbers them and names threads
        if (sent_before)
            return;
        batch += row;
        batch += '\n';
        ++outcome.sent;
        if (batch.size() >= options_.batch_bytes)
            flush();
    });
    if (!batch.empty())
        flush();
    outcome.events = stream.events;
    send(kInsertStream, stream_row(description, stream), stored);
    return outcome;
}

} // namespace posixtrace::cli
