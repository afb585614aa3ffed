// C ABI of the trace stream functions: handle lookup and argument checks;
// the Stream does the work.
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <signal.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "log/log_table.hpp"
#include "stream/stream_table.hpp"
#include "util/export.hpp"

using namespace posixtrace;
using posixtrace::log::LogReader;
using posixtrace::log::LogTable;

namespace {

std::shared_ptr<Stream> stream_of(trace_id_t trid)
{
    return StreamTable::instance().find(trid);
}
std::shared_ptr<LogReader> log_of(trace_id_t trid)
{
    return LogTable::instance().find(trid);
}
// An active stream or a log opened for analysis, for what both answer.
std::shared_ptr<ReadableTrace> readable_of(trace_id_t trid)
{
    if (auto stream = stream_of(trid))
        return stream;
    return log_of(trid);
}

// The stream this thread last looked up to read from, with the table's
// version then: while the version stays, a getnext an event finds it again
// without the table's lock or a reference count, whose atomic operations
// cost as much as the rest of the call. A shutdown frees the stream's
// slot, rings, store and log at once; if another thread shut it down,
// what is left (the object and two eventfds) goes at this thread's next
// read or exit. The shutting thread lets its own reference go at once.
struct StreamLastRead {
    trace_id_t id = 0;
    uint64_t table_version = 0;
    Stream *stream = nullptr; // nullptr: the id named no stream of this process
};
// Trivially destructible and constant-initialised, so that reading it takes
// no call (a guard of its initialisation would be found through one): the
// reference that keeps `stream` alive is apart, touched only as it changes.
constinit thread_local StreamLastRead last_read __attribute__((tls_model("initial-exec"))) = {};
thread_local std::shared_ptr<Stream> last_read_kept;

Stream *stream_to_read(trace_id_t trid)
{
    StreamTable &table = StreamTable::instance();
    // Read before find(): a change in between makes the next call look again.
    uint64_t version = table.version();
    if (last_read.id != trid || last_read.table_version != version) {
        last_read_kept = table.find(trid);
        last_read = {trid, version, last_read_kept.get()};
    }
    Stream *stream = last_read.stream;
    // A forked child inherits the thread's memory and the table alike.
    return stream && stream->owned_by_this_process() ? stream : nullptr;
}

// The namespace ids of the event this thread read last from a trace (trace
// ids are never given twice). The trace read last is kept apart, where
// getnext finds it without a call; the others this thread read are kept
// while they are open.
struct LastEventIds {
    trace_id_t trid = 0;
    EventNamespaceIds ids;
};
constinit thread_local LastEventIds last_event_ids __attribute__((tls_model("initial-exec"))) = {};
// The others, and how many of them there may be before those closed since
// are looked for: twice what was open at the last look, so that what is
// kept is bounded by what is open and a thread reading many open traces in
// turn does not look at every switch.
constexpr size_t kEarlierTracesFirstLook = 16;
struct EarlierTracesIds {
    std::vector<LastEventIds> kept;
    size_t look_at = kEarlierTracesFirstLook;
};
thread_local EarlierTracesIds earlier_traces_ids;

void remember_event_ids(trace_id_t trid, const EventNamespaceIds &ids)
{
    if (last_event_ids.trid != trid && last_event_ids.trid != 0) {
        EarlierTracesIds &earlier = earlier_traces_ids;
        std::erase_if(earlier.kept, [trid](const LastEventIds &kept) { return kept.trid == trid; });
        if (earlier.kept.size() >= earlier.look_at) {
            std::erase_if(earlier.kept,
                          [](const LastEventIds &kept) { return !readable_of(kept.trid); });
            earlier.look_at = std::max(kEarlierTracesFirstLook, 2 * earlier.kept.size());
        }
        earlier.kept.push_back(last_event_ids);
    }
    last_event_ids = {trid, ids};
}

const EventNamespaceIds *event_ids_read_last(trace_id_t trid)
{
    if (last_event_ids.trid == trid)
        return &last_event_ids.ids;
    for (const LastEventIds &kept : earlier_traces_ids.kept)
        if (kept.trid == trid)
            return &kept.ids;
    return nullptr;
}

// `log_fd` >= 0: posix_trace_create_withlog.
int create_stream(pid_t pid, const trace_attr_t *attr, trace_id_t *trid, int log_fd = -1)
{
    if (!trid || pid < 0)
        return EINVAL;
    Attributes attributes = Attributes::defaults();
    if (attr) {
        const Attributes *given = attributes_of(attr);
        if (!given)
            return EINVAL;
        attributes = *given;
    }
    attributes = attributes.for_stream(log_fd >= 0);
    if (attributes.stream_full_policy == POSIX_TRACE_FLUSH && log_fd < 0)
        return EINVAL; // only meaningful for a stream with a log
    if (pid == 0)
        pid = getpid();
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return ESRCH;
    std::shared_ptr<Stream> stream;
    if (int err = Stream::create(pid, attributes, stream, log_fd))
        return err;
    *trid = StreamTable::instance().add(std::move(stream), log_fd >= 0);
    return 0;
}

// A pre-recorded log never waits: its events are there or it has ended.
// trygetnext is for active streams only (POSIX: an error for a log).
int get_next(trace_id_t trid, posix_trace_event_info *event, void *data, size_t num_bytes,
             size_t *data_len, int *unavailable, WaitMode mode, const timespec *abstime)
{
    if (!event || !data_len || !unavailable)
        return EINVAL;
    EventNamespaceIds ids;
    EventDestination to{event, data, num_bytes, data_len, &ids};
    int err;
    if (Stream *stream = stream_to_read(trid)) {
        err = stream->next_event(to, unavailable, mode, abstime);
    } else {
        auto log = log_of(trid);
        if (!log)
            return EINVAL;
        err = log->next_event(to, unavailable, mode, abstime);
    }
    if (err == 0 && !*unavailable)
        remember_event_ids(trid, ids);
    return err;
}

} // namespace

POSIXTRACE_EXPORT int posix_trace_create(pid_t pid, const trace_attr_t *__restrict attr,
                                         trace_id_t *__restrict trid)
{
    return create_stream(pid, attr, trid);
}

POSIXTRACE_EXPORT int posix_trace_start(trace_id_t trid)
{
    auto stream = stream_of(trid);
    return stream ? stream->start() : EINVAL;
}

POSIXTRACE_EXPORT int posix_trace_stop(trace_id_t trid)
{
    auto stream = stream_of(trid);
    return stream ? stream->stop() : EINVAL;
}

POSIXTRACE_EXPORT int posix_trace_shutdown(trace_id_t trid)
{
    auto stream = StreamTable::instance().remove(trid);
    if (!stream)
        return EINVAL;
    if (last_read.stream == stream.get()) {
        last_read = {};
        last_read_kept.reset();
    }
    return stream->shutdown();
}

POSIXTRACE_EXPORT int posix_trace_clear(trace_id_t trid)
{
    auto stream = stream_of(trid);
    return stream ? stream->clear() : EINVAL;
}

POSIXTRACE_EXPORT int posix_trace_get_attr(trace_id_t trid, trace_attr_t *attr)
{
    if (!attr)
        return EINVAL;
    auto trace = readable_of(trid);
    if (!trace)
        return EINVAL;
    store_attributes(attr, trace->attributes());
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_get_status(trace_id_t trid, posix_trace_status_info *status)
{
    if (!status)
        return EINVAL;
    auto trace = readable_of(trid);
    if (!trace)
        return EINVAL;
    *status = trace->report_status();
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_get_origin(trace_id_t trid, posix_trace_origin *origin)
{
    auto trace = readable_of(trid);
    if (!trace || !origin)
        return EINVAL;
    std::optional<TraceOrigin> known = trace->origin();
    if (!known)
        return ENODATA;
    *origin = {};
    std::memcpy(origin->host_name, known->host_name.data(),
                std::min(known->host_name.size(), sizeof origin->host_name - 1));
    std::memcpy(origin->boot_id, known->boot_id, sizeof origin->boot_id);
    std::memcpy(origin->stream_id, known->stream_id, sizeof origin->stream_id);
    origin->realtime_offset_ns = known->realtime_offset_ns;
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_event_namespace_ids(trace_id_t trid,
                                                      posix_trace_namespace_ids *ids)
{
    if (!ids || !readable_of(trid))
        return EINVAL;
    const EventNamespaceIds *read_last = event_ids_read_last(trid);
    if (!read_last || !read_last->known)
        return ENODATA;
    *ids = {pid_t(read_last->ids.pid), pid_t(read_last->ids.tid)};
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_get_counters(trace_id_t trid, posix_trace_counters *counters)
{
    auto trace = readable_of(trid);
    if (!trace || !counters)
        return EINVAL;
    std::optional<posix_trace_counters> known = trace->counters();
    if (!known)
        return ENODATA;
    *counters = *known;
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_get_loss_counters(trace_id_t trid,
                                                    posix_trace_loss_counters *losses)
{
    auto stream = stream_of(trid);
    if (!stream || !losses)
        return EINVAL;
    *losses = stream->loss_counters();
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_get_unwritten_events(trace_id_t trid, uint64_t *events)
{
    auto stream = stream_of(trid);
    if (!stream || !events)
        return EINVAL;
    *events = stream->unwritten_events();
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_get_untraced_children(trace_id_t trid, uint64_t *children)
{
    auto stream = stream_of(trid);
    if (!stream || !children)
        return EINVAL;
    *children = stream->probes().untraced_children();
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_get_skipped_runs(trace_id_t trid,
                                                   posix_trace_program_runs *programs,
                                                   size_t capacity, size_t *count)
{
    auto stream = stream_of(trid);
    if (!stream || !count || (!programs && capacity))
        return EINVAL;
    auto runs = stream->probes().skipped_runs();
    for (size_t i = 0; i < runs.size() && i < capacity; ++i) {
        programs[i] = {};
        std::strncpy(programs[i].program, runs[i].program.c_str(), sizeof programs[i].program - 1);
        programs[i].skipped = runs[i].misses;
    }
    *count = runs.size();
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_usdt_attach(trace_id_t trid, const char *probes, size_t *attached)
{
    auto stream = stream_of(trid);
    if (!stream || !probes)
        return EINVAL;
    size_t count = 0;
    int err = stream->probes().attach_usdt(probes, count);
    if (attached)
        *attached = count;
    return err;
}

POSIXTRACE_EXPORT int posix_trace_usdt_unattached(trace_id_t trid, size_t *objects,
                                                  int *first_error)
{
    auto stream = stream_of(trid);
    if (!stream)
        return EINVAL;
    auto unattached = stream->probes().unattached_probes();
    if (objects)
        *objects = unattached.objects;
    if (first_error)
        *first_error = unattached.first_error;
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_usdt_decode_string(trace_id_t trid, const char *probe,
                                                     unsigned index)
{
    auto stream = stream_of(trid);
    if (!stream || !probe)
        return EINVAL;
    return stream->probes().decode_usdt_string(probe, index);
}

POSIXTRACE_EXPORT int posix_trace_set_filter(trace_id_t trid, const trace_event_set_t *set, int how)
{
    auto stream = stream_of(trid);
    if (!stream || !set)
        return EINVAL;
    return stream->set_filter(*set, how);
}

POSIXTRACE_EXPORT int posix_trace_get_filter(trace_id_t trid, trace_event_set_t *set)
{
    auto stream = stream_of(trid);
    if (!stream || !set)
        return EINVAL;
    *set = stream->filter();
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_getnext_event(trace_id_t trid,
                                                posix_trace_event_info *__restrict event,
                                                void *__restrict data, size_t num_bytes,
                                                size_t *__restrict data_len,
                                                int *__restrict unavailable)
{
    return get_next(trid, event, data, num_bytes, data_len, unavailable, WaitMode::Block, nullptr);
}

POSIXTRACE_EXPORT int
posix_trace_timedgetnext_event(trace_id_t trid, posix_trace_event_info *__restrict event,
                               void *__restrict data, size_t num_bytes, size_t *__restrict data_len,
                               int *__restrict unavailable, const timespec *__restrict abstime)
{
    return get_next(trid, event, data, num_bytes, data_len, unavailable, WaitMode::Until, abstime);
}

POSIXTRACE_EXPORT int posix_trace_trygetnext_event(trace_id_t trid,
                                                   posix_trace_event_info *__restrict event,
                                                   void *__restrict data, size_t num_bytes,
                                                   size_t *__restrict data_len,
                                                   int *__restrict unavailable)
{
    return get_next(trid, event, data, num_bytes, data_len, unavailable, WaitMode::Try, nullptr);
}

POSIXTRACE_EXPORT int posix_trace_trid_eventid_open(trace_id_t trid, const char *__restrict name,
                                                    trace_event_id_t *__restrict id)
{
    auto stream = stream_of(trid);
    if (!stream || !name || !id)
        return EINVAL;
    return stream->open_event_type(name, *id);
}

POSIXTRACE_EXPORT int posix_trace_eventid_get_name(trace_id_t trid, trace_event_id_t id, char *name)
{
    if (!name)
        return EINVAL;
    std::optional<std::string> found;
    if (auto trace = readable_of(trid))
        found = trace->event_name(id);
    if (!found)
        return EINVAL;
    std::memcpy(name, found->c_str(), found->size() + 1);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_eventid_equal(trace_id_t, trace_event_id_t a, trace_event_id_t b)
{
    return a == b;
}

POSIXTRACE_EXPORT int posix_trace_eventtypelist_getnext_id(trace_id_t trid,
                                                           trace_event_id_t *__restrict id,
                                                           int *__restrict unavailable)
{
    if (!id || !unavailable)
        return EINVAL;
    auto trace = readable_of(trid);
    if (!trace)
        return EINVAL;
    trace->next_event_type(*id, *unavailable);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_eventtypelist_rewind(trace_id_t trid)
{
    auto trace = readable_of(trid);
    if (!trace)
        return EINVAL;
    trace->rewind_event_types();
    return 0;
}

// ---- Trace Log option --------------------------------------------------------------

POSIXTRACE_EXPORT int posix_trace_create_withlog(pid_t pid, const trace_attr_t *__restrict attr,
                                                 int fd, trace_id_t *__restrict trid)
{
    if (fd < 0)
        return EBADF;
    return create_stream(pid, attr, trid, fd);
}

POSIXTRACE_EXPORT int posix_trace_flush(trace_id_t trid)
{
    auto stream = stream_of(trid);
    return stream ? stream->flush() : EINVAL;
}

POSIXTRACE_EXPORT int posix_trace_open(int fd, trace_id_t *trid)
{
    if (!trid)
        return EINVAL;
    std::unique_ptr<LogReader> reader;
    if (int err = LogReader::open(fd, reader))
        return err;
    *trid = LogTable::instance().add(std::move(reader));
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_rewind(trace_id_t trid)
{
    auto log = log_of(trid);
    if (!log)
        return EINVAL;
    log->rewind();
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_close(trace_id_t trid)
{
    return LogTable::instance().remove(trid) ? 0 : EINVAL;
}
