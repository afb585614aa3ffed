// Recording::plan_for: what a stream records, and how, from its attributes.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "emit/lanes.hpp"
#include "events/stream_user_events.hpp"
#include "stream/recording.hpp"
#include "util/own_objects.hpp"

namespace posixtrace {
namespace {

// The rings only carry records from the kernel to the drain, which empties
// them every millisecond: together they hold about one stream, so the
// kernel memory a stream pins does not grow with the number of CPUs.
constexpr size_t kMinRingBytes = 256 * 1024;
constexpr size_t kMaxRingBytes = 64u << 20;

size_t ring_bytes_for(size_t stream_size)
{
    size_t share = stream_size / size_t(std::max(1, libbpf_num_possible_cpus()));
    size_t bytes = kMinRingBytes;
    while (bytes < share && bytes < kMaxRingBytes)
        bytes *= 2;
    return bytes;
}

// The lanes of a self-tracing process may hold a whole stream's worth
// between the emitting threads and the drain, in memory taken as they fill:
// however fast the threads emit, and however late the drain, they lose
// nothing the stream has room for. At least kLaneBudgetAtLeast, so that the
// newest events of a burst reach a small POSIX_TRACE_LOOP stream, which
// drops its oldest.
constexpr size_t kLaneBudgetAtLeast = 32u << 20;

// The process's own user events go through its lanes when the stream traces
// the calling process alone (the uprobe stays for its children otherwise) and
// no other stream holds them. POSIXTRACE_USER_EVENTS=kernel keeps the uprobe:
// the test suites run both paths.
bool takes_lanes(pid_t target, const Attributes &attributes)
{
    const char *path = getenv("POSIXTRACE_USER_EVENTS");
    return target == getpid() && attributes.inheritance != POSIX_TRACE_INHERITED &&
           !(path && std::string_view(path) == "kernel");
}

} // namespace

// The lanes hold what the stream may, and under POSIX_TRACE_LOOP make room
// as the stream does, by their oldest records: a lane need not hold more
// than the stream keeps (its records take as many bytes there).
Recording::Plan Recording::plan_for(pid_t target, const Attributes &attributes)
{
    Plan plan;
    plan.target = target;
    if (target == getpid())
        // A function of the library's own: posix_trace_event's address, as
        // the library sees it, may be a program's entry that calls it.
        plan.binary = object_path_of(reinterpret_cast<void *>(&emit_to_lanes));
    else if ((plan.binary_file = user_event_object_of(target)))
        plan.binary = plan.binary_file->path();
    size_t ring_bytes = ring_bytes_for(attributes.stream_size);
    bool loop = attributes.stream_full_policy == POSIX_TRACE_LOOP;
    plan.config = {ring_bytes, uint32_t(attributes.max_data_size), loop ? ring_bytes : 0};
    plan.inherit = attributes.inheritance == POSIX_TRACE_INHERITED;
    plan.lanes_wanted = takes_lanes(target, attributes);
    plan.lane_budget = std::max(attributes.stream_size, kLaneBudgetAtLeast);
    plan.loop_kept_bytes =
        attributes.stream_full_policy == POSIX_TRACE_LOOP ? attributes.stream_size : 0;
    return plan;
}

} // namespace posixtrace
