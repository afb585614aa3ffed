#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "events/stream_user_events.hpp"
#include "kernel/kernel_program.hpp"
#include "usdt/probe_attacher.hpp"

namespace posixtrace {

// The stream follows its processes by their fork, exec, exit and link-map
// records. When one found no room, the stream looks at every traced process
// instead, at most once a period (longer in proportion past
// kProcessesEachPeriod processes: a process that keeps records from fitting
// cannot keep the drain reading /proc): probes are attached in the objects
// each maps now (a new image's, a dlopened library's), processes gone are
// forgotten, and so, once all they recorded is delivered, are the images no
// process runs any more. Events of an image the stream was not told of are
// named by that image's own names (StreamUserEvents).
class ProcessRescan {
public:
    // A look is a /proc scan of each process.
    static constexpr uint64_t kPeriodNs = 10'000'000;
    static constexpr uint64_t kProcessesEachPeriod = 100;

    explicit ProcessRescan(StreamUserEvents &user_events) : user_events_(user_events) {}

    // Whether the drain has work here without being woken: a look owed,
    // or images waiting to be forgotten.
    bool pending(const KernelProgram &kernel) const
    {
        return images_to_forget_ || kernel.lifecycle_lost() != lost_seen_;
    }
    // Once a drain pass.
    void look(uint64_t now_ns, const KernelProgram &kernel, ProbeAttacher &probes);
    // Everything stamped before `safe_ns` (monotonic) is delivered.
    void delivered_before(uint64_t safe_ns);

private:
    StreamUserEvents &user_events_;
    // Lifecycle records that found no room, as last looked at, when, and
    // how many processes that look found.
    uint64_t lost_seen_ = 0;
    uint64_t looked_ns_ = 0; // monotonic
    size_t processes_seen_ = 0;
    // Images no process ran at the last look: forgotten once everything
    // stamped before that look is delivered.
    struct ImagesToForget {
        uint64_t looked_ns; // monotonic
        std::vector<uint32_t> images;
    };
    std::optional<ImagesToForget> images_to_forget_;
};

} // namespace posixtrace
