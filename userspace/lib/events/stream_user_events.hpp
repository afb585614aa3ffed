#pragma once
#include <posix_trace/events.h>
#include <sys/types.h>
#include <trace.h>

#include <bitset>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "events/remote_user_events.hpp"
#include "util/process_files.hpp"

namespace posixtrace {

// The object mapped in `pid` that holds the posix_trace:event probe, opened
// (process_files.hpp) and named as in /proc/PID/maps: the shared library
// when the process loaded it (or is about to, held at its exec), else its
// executable when that has the probe (linked with libposixtrace.a); nullopt
// when neither.
std::optional<ProcessFile> user_event_object_of(pid_t pid);

// The user event types of one stream. A traced process numbers its names
// itself (posix_trace_eventid_open); the processes a stream traces by
// inheritance share one numbering (the registry's table is shared across
// fork), and it is the stream's. A process that exec'd another image
// numbers afresh: its ids are translated to the stream's by name. Names
// are learned in-band (posix_trace:eventid_open records), from the process's
// memory for names registered before the stream attached, and kept after the
// process is gone.
class StreamUserEvents {
public:
    // `primary`: the process the stream was created for.
    explicit StreamUserEvents(pid_t primary);

    void learned(pid_t pid, trace_event_id_t local_id, std::string name);
    void forked(pid_t parent, pid_t child);
    void execed(pid_t pid);
    void exited(pid_t pid);
    // `pid` loaded or unloaded objects.
    void objects_changed(pid_t pid);

    // The stream's id for the id `pid` recorded.
    trace_event_id_t stream_id(pid_t pid, trace_event_id_t local_id);
    std::optional<std::string> name_of(trace_event_id_t id);
    std::vector<trace_event_id_t> ids();
    // posix_trace_trid_eventid_open: 0, or ENAMETOOLONG.
    int open(const char *name, trace_event_id_t &id);

private:
    struct Numbering { // the names of one image's processes, by their ids
        std::map<trace_event_id_t, std::string> names;
        std::unique_ptr<RemoteUserEventNames> memory; // another process's table
        pid_t reader = 0;                             // whose memory
        bool object_looked_up = false;                // for `memory`, since the last dlopen
    };

    Numbering &numbering_of(pid_t pid);
    void give_numbering(pid_t pid, std::unique_ptr<Numbering> numbering);
    void drop_numbering(pid_t pid);
    std::optional<std::string> local_name(Numbering &numbering, trace_event_id_t local_id);
    std::optional<trace_event_id_t> primary_id_of(const std::string &name);
    bool primary_names_itself();
    trace_event_id_t own_id(trace_event_id_t id);
    std::optional<trace_event_id_t> free_foreign_id();

    pid_t primary_;
    bool self_;
    std::vector<std::unique_ptr<Numbering>> numberings_; // [0]: the stream's own; null: exited
    std::map<pid_t, size_t> numbering_of_pid_;           // absent: [0]
    std::map<std::pair<size_t, trace_event_id_t>, trace_event_id_t> translated_;
    // Names only exec'd images registered, with the ids the stream gave them.
    std::map<std::string, trace_event_id_t> foreign_ids_;
    std::map<trace_event_id_t, std::string> foreign_names_;
    // Ids the stream's own numbering has recorded: never given to a name
    // only exec'd images have (foreign_names_).
    std::bitset<POSIX_TRACE_USDT_EVENT_FIRST> own_used_;
};

} // namespace posixtrace
