#pragma once
#include <trace.h>

#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attributes/attributes.hpp"
#include "kernel/kernel_program.hpp"
#include "sources/record_source.hpp"
#include "stream/ring_merger.hpp"
#include "usdt/probe_attacher.hpp"
#include "util/process_files.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace {

// Where a stream's records come from: the loaded kernel program and the
// probes attached with it, the sources of records (the kernel's rings, the
// process's lanes), their merge, and what the drain thread waits on. The
// stream asks it for records and losses; how they are recorded stays here,
// and so does the kernel side's life: taken from the process's parking when
// an earlier stream left one, parked again at the end.
class Recording {
public:
    struct Plan {
        pid_t target = 0;
        // The object whose user-event probe the lanes may stand in for; a
        // path into /proc/self/fd of `binary_file` when that is open.
        std::string binary;
        std::optional<ProcessFile> binary_file;
        KernelProgram::Config config{};
        bool inherit = false;
        bool lanes_wanted = false;
        // What the lanes may hold, and keep under POSIX_TRACE_LOOP.
        size_t lane_budget = 0;
        size_t loop_kept_bytes = 0;
    };

    // What a stream of `target` with `attributes` records, and how.
    static Plan plan_for(pid_t target, const Attributes &attributes);

    Recording() = default;
    Recording(const Recording &) = delete;
    Recording &operator=(const Recording &) = delete;
    ~Recording() { close(false); }

    // Every record comes from rings created after `rings_created_after_ns`
    // (CLOCK_MONOTONIC), which the caller reads first. 0 or an errno.
    int open(const Plan &plan, uint64_t rings_created_after_ns);
    // The kernel side came from an earlier stream of this process: its
    // rings may still hold that stream's records, stamped before this one.
    bool reused() const { return reused_; }
    bool has_lanes() const { return has_lanes_; }

    bool has_kernel() const { return kernel_ != nullptr; }
    KernelProgram &kernel() { return *kernel_; }
    const KernelProgram &kernel() const { return *kernel_; }
    ProbeAttacher *probes() { return probes_.get(); }
    const ProbeAttacher *probes() const { return probes_.get(); }
    RingMerger &merger() { return merger_; }
    const RingMerger &merger() const { return merger_; }

    // Both before the caller stamps the change (RecordSource).
    void set_state(pt_stream_state state);
    void set_filter(const trace_event_set_t &filtered);
    // What the sources' rings could not hold, counted since the stream began.
    SourceLosses losses();
    uint64_t refused_while_full() const;
    void doze();

    // Upkeep before a merge pass: rings made since the last join the merge;
    // `given_up` hears of the records each source gave up.
    void look_after_sources(uint64_t now_ns,
                            const std::function<void(const RingMerger::GivenUp &)> &given_up);
    // Until a ring turns readable, wake() is called, or `timeout` passes.
    void wait(const std::optional<timespec> &timeout);
    // Any thread; nothing before open().
    void wake();

    // Ends recording: with `park`, the kernel side, its rings emptied, is
    // left for the process's next stream (its probes only if open()
    // finished: a half-done one may have attached what nobody asked for).
    void close(bool park);

private:
    bool take_parked_kernel_side(const Plan &plan);
    bool attach_lanes(const Plan &plan);
    int watch_sources();

    std::unique_ptr<KernelProgram> kernel_;
    std::unique_ptr<ProbeAttacher> probes_;
    RingMerger merger_;
    std::vector<std::unique_ptr<RecordSource>> sources_;
    std::unique_ptr<RecordSource> lanes_; // until they join sources_
    UniqueFd wakeup_;                     // eventfd, wakes the drain thread
    UniqueFd epoll_;                      // the rings and wakeup_
    bool reused_ = false;
    bool has_lanes_ = false;
    bool open_done_ = false;
};

} // namespace posixtrace
