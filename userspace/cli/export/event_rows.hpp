#pragma once
// The row of each event of a log, its columns named after OpenTelemetry's
// attributes where one exists: what `export --format jsonl` writes a line
// of, and `push` sends to ClickHouse.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "../logged_event.hpp"

namespace posixtrace::cli {

// One event's values, before a format writes them: its place in the
// stream, both clocks, the process and thread (the namespace ids 0 for the
// host's), the event's name, class and payload, the fields decoded from the
// payload (JSON object members, without the braces) and the losses reported
// before it. The texts are as the format makes them (EventRows::text) and
// last until the rows' next call.
struct EventRow {
    uint64_t sequence;
    uint64_t time_unix_nano;
    int64_t time_monotonic_ns;
    pid_t pid, tid, vpid, vtid;
    std::string_view thread_name, event_name;
    const char *event_class;
    trace_event_id_t event_id;
    std::string_view data;
    const char *truncated;
    uint64_t lost_before;
    std::string fields;
};

// Every row carries what places its event among a fleet's: the host and
// stream it comes from (the log's, the same for every row) and an EventRow.
// - JsonObject: one flat JSON object (dots in the keys), the decoded fields
//   an object of their own; a table of the same columns takes it as it is.
// - Utf8Text: no format of its own, for a binary one: the texts as JSON
//   would store them, unescaped (text that is not UTF-8 as Latin-1).
class EventRows {
public:
    enum class Format { JsonObject, Utf8Text };
    EventRows(const LogDescription &description, Format format);

    // The next event's values; events come in the log's order.
    EventRow row(const LoggedEvent &event);
    // Appends the next event's row as a JSON object and a newline to `out`.
    void append_json_row(const LoggedEvent &event, std::string &out);
    // Counts the next event as row() would, without its row (one the
    // engine holds already).
    void skip_row(const LoggedEvent &event);
    bool has_origin() const { return has_origin_; }
    uint64_t next_sequence() const { return sequence_; }

    // The class of an event type: user, usdt, td or system.
    static const char *class_of(trace_event_id_t id);

private:
    // A text value as the format writes it.
    std::string text(std::string_view value) const;
    int64_t monotonic_ns(uint64_t realtime_ns) const;
    void remember_thread_name(const LoggedEvent &event);
    void count_row(const LoggedEvent &event);
    const std::string &name_text(const LoggedEvent &event);

    Format format_;
    bool has_origin_;
    std::string host_, boot_id_, stream_id_, stream_name_; // as the format writes them
    int64_t realtime_offset_ns_ = 0;
    uint64_t sequence_ = 0;
    uint64_t lost_before_ = 0;
    std::map<std::pair<pid_t, pid_t>, std::string> thread_names_; // (pid, tid) -> text()
    std::string unnamed_thread_;
    // an event type's name, and its text()
    std::unordered_map<trace_event_id_t, std::pair<std::string, std::string>> name_texts_;
};

} // namespace posixtrace::cli
