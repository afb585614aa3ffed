#pragma once
// The row of each event of a log, its columns named after OpenTelemetry's
// attributes where one exists: what `export --format jsonl` writes a line
// of, and `push` sends to ClickHouse.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "../logged_event.hpp"

namespace posixtrace::cli {

// Every row carries what places its event among a fleet's: the host and
// stream it comes from, its sequence in the stream, both clocks, the
// process and thread (host.name, process.pid, thread.id, thread.name), the
// event's name and class, its payload and the fields decoded from it, and
// the events lost before it.
// - JsonObject: one flat JSON object (dots in the keys), the decoded fields
//   an object of their own; a table of the same columns takes it as it is.
// - TabSeparated: the values of tab_separated_columns() in ClickHouse's
//   TabSeparated format, the text values as JSON would store them (text
//   that is not UTF-8 as Latin-1), the decoded fields as JSON text. The
//   format an engine parses fastest short of a binary one.
class EventRows {
public:
    enum class Format { JsonObject, TabSeparated };
    EventRows(const LogDescription &description, Format format);

    // Appends the next event's row and a newline to `out`; events come in
    // the log's order.
    void append_row(const LoggedEvent &event, std::string &out);
    // Counts the next event as append_row() would, without its row (one
    // the engine holds already).
    void skip_row(const LoggedEvent &event);
    bool has_origin() const { return has_origin_; }
    uint64_t next_sequence() const { return sequence_; }

    // The columns of a TabSeparated row, in order, comma-separated.
    static const char *tab_separated_columns();
    // The class of an event type: user, usdt, td or system.
    static const char *class_of(trace_event_id_t id);

private:
    // A text value as the format writes it.
    std::string text(std::string_view value) const;
    int64_t monotonic_ns(uint64_t realtime_ns) const;
    void remember_thread_name(const LoggedEvent &event);
    void count_row(const LoggedEvent &event);
    void append_json(const LoggedEvent &event, const std::string &thread_name, std::string &out);
    void append_tab_separated(const LoggedEvent &event, const std::string &thread_name,
                              std::string &out);
    const std::string &name_text(const LoggedEvent &event);

    Format format_;
    bool has_origin_;
    std::string host_, boot_id_, stream_id_, stream_name_; // as the format writes them
    int64_t realtime_offset_ns_ = 0;
    uint64_t sequence_ = 0;
    uint64_t lost_before_ = 0;
    std::map<std::pair<pid_t, pid_t>, std::string> thread_names_; // (pid, tid) -> text()
    std::string unnamed_thread_;
    std::string row_start_; // a TabSeparated row's first four values, each row's
    // an event type's name, and its text()
    std::unordered_map<trace_event_id_t, std::pair<std::string, std::string>> name_texts_;
};

} // namespace posixtrace::cli
