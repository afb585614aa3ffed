#pragma once
#include <posix_trace/events.h>
#include <sys/types.h>
#include <trace.h>

#include <bitset>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "events/event_names.hpp"
#include "events/remote_user_events.hpp"
#include "posixtrace.h"
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
//
// A numbering belongs to an image (posixtrace.h): the kernel numbers each
// image a traced process runs, and every user event and name notice says
// which image recorded it. An image the stream was not told of (its fork or
// exec record found no room) gets a numbering of its own, read from the
// process's memory only while the process still runs that image: its ids
// are never read through another image's names.
class StreamUserEvents {
public:
    // The image a traced process runs now, PT_IMAGE_NONE when not traced.
    using ImageOf = std::function<uint32_t(pid_t)>;

    // `primary`: the process the stream was created for. `own_names`: this
    // process's names when the primary is this process, else nullptr.
    StreamUserEvents(pid_t primary, ImageOf image_of, OwnUserEventNames *own_names);
    // The image the primary ran when it was first traced: the stream's own
    // numbering is that image's.
    void set_primary_image(uint32_t image);

    void learned(pid_t pid, uint32_t image, trace_event_id_t local_id, std::string name);
    void forked(pid_t parent, uint32_t parent_image, pid_t child, uint32_t child_image);
    void execed(pid_t pid, uint32_t image);
    void exited(pid_t pid, uint32_t image);
    // A process running `image` loaded or unloaded objects.
    void objects_changed(uint32_t image);
    // After lifecycle records were lost: every process's objects are looked
    // at again (a dlopen may have gone unseen).
    void look_again_at_objects();
    // The images known here that are not `running` (lost exit or exec
    // records left their numberings behind).
    std::vector<uint32_t> images_not_in(const std::set<uint32_t> &running) const;
    // Once all they recorded was delivered.
    void drop_images(const std::vector<uint32_t> &images);

    // The stream's id for the id that `pid`, running `image`, recorded.
    trace_event_id_t stream_id(pid_t pid, uint32_t image, trace_event_id_t local_id);
    std::optional<std::string> name_of(trace_event_id_t id);
    std::vector<trace_event_id_t> ids();
    // posix_trace_trid_eventid_open: 0, or ENAMETOOLONG.
    int open(const char *name, trace_event_id_t &id);

private:
    struct Numbering { // the names of one image's processes, by their ids
        std::map<trace_event_id_t, std::string> names;
        std::unique_ptr<RemoteUserEventNames> memory; // another process's table
        pid_t reader = 0;                             // whose memory, while it runs `image`
        uint32_t image = PT_IMAGE_NONE;
        bool object_looked_up = false; // for `memory`, since the last dlopen
    };

    // The numbering of `image`; one read from `pid`'s memory when the
    // stream did not know the image.
    size_t index_of(pid_t pid, uint32_t image);
    void give_numbering(uint32_t image, std::unique_ptr<Numbering> numbering);
    void drop_numbering(uint32_t image);
    // `pid` runs `image` from now on; the numbering of the image it ran
    // before goes.
    void now_runs(pid_t pid, uint32_t image);
    std::optional<std::string> read_memory(Numbering &numbering, trace_event_id_t local_id);
    // Whether the numbering's process still runs its image. If not, its
    // reader stops: the first `kept` names it read (those read before the
    // change) become the numbering's own.
    bool still_running(Numbering &numbering, size_t kept);
    static void stop_reading(Numbering &numbering, size_t kept);
    static size_t names_read(const Numbering &numbering);
    std::optional<std::string> local_name(Numbering &numbering, trace_event_id_t local_id);
    std::optional<trace_event_id_t> primary_id_of(const std::string &name);
    bool primary_names_itself();
    trace_event_id_t own_id(trace_event_id_t id);
    std::optional<trace_event_id_t> free_foreign_id();

    pid_t primary_;
    OwnUserEventNames *own_names_; // a stream of this process: its own table
    ImageOf image_of_;
    std::vector<std::unique_ptr<Numbering>> numberings_; // [0]: the stream's own; null: exited
    std::map<uint32_t, size_t> numbering_of_image_;      // PT_IMAGE_NONE: [0]
    std::map<pid_t, uint32_t> image_of_pid_;             // as the records said last
    std::map<std::pair<size_t, trace_event_id_t>, trace_event_id_t> translated_;
    // Names only exec'd images registered, with the ids the stream gave them.
    std::map<std::string, trace_event_id_t> foreign_ids_;
    std::map<trace_event_id_t, std::string> foreign_names_;
    // Ids the stream's own numbering has recorded: never given to a name
    // only exec'd images have (foreign_names_).
    std::bitset<POSIX_TRACE_USDT_EVENT_FIRST> own_used_;
};

} // namespace posixtrace
