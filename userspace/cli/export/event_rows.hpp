#pragma once
// The JSON object of each event of a log, flat keys in the names of
// OpenTelemetry's attributes where one exists: what `export --format jsonl`
// writes a line of and `push` sends to ClickHouse.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "../logged_event.hpp"

namespace posixtrace::cli {

// Every object carries what places its event among a fleet's: the host
// and stream it comes from, its sequence in the stream, both clocks, the
// process and thread (host.name, process.pid, thread.id, thread.name), the
// event's name and class, its payload and the fields decoded from it, and
// the events lost before it. The keys are flat (dots in their names), so a
// table of the same columns takes the objects as they are.
class EventRows {
public:
    // How the decoded fields go: a JSON object, or that object's text as a
    // JSON string (for an engine that stores it in a column of text).
    enum class Fields { Object, Text };
    EventRows(const LogDescription &description, Fields fields);

    // The next event's object, on one line without its newline; events
    // come in the log's order.
    std::string row(const LoggedEvent &event);
    bool has_origin() const { return has_origin_; }
    uint64_t next_sequence() const { return sequence_; }

    // The class of an event type: user, usdt, td or system.
    static const char *class_of(trace_event_id_t id);

private:
    void remember_thread_name(const LoggedEvent &event);

    std::string origin_members_;
    Fields fields_;
    bool has_origin_;
    int64_t realtime_offset_ns_ = 0;
    uint64_t sequence_ = 0;
    uint64_t lost_before_ = 0;
    std::map<std::pair<pid_t, pid_t>, std::string> thread_names_; // (pid, tid) -> JSON string
};

} // namespace posixtrace::cli
