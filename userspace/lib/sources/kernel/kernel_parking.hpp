#pragma once
#include <chrono>
#include <memory>
#include <optional>

#include "kernel/kernel_program.hpp"
#include "usdt/probe_attacher.hpp"

namespace posixtrace {

// What a stream set up in the kernel: its loaded program and the probes
// attached with it.
struct KernelSide {
    std::unique_ptr<KernelProgram> program;
    std::unique_ptr<ProbeAttacher> probes;              // refers to *program; or none
    std::chrono::steady_clock::time_point idle_since{}; // parked then
};

// Loading a stream's BPF object costs tens of milliseconds (the verifier,
// the ring table's RCU grace period) and detaching its probes hundreds (two
// grace periods for each uprobe and syscall tracepoint). So a stream parks
// its kernel side when it ends, idle (suspended, tracing nothing, its tables
// empty), and the process's next stream of the same ring size takes it,
// whatever process that stream traces. Probes a later stream of the same
// process may take as they are (ProbeAttacher::reusable) are parked with
// it; the others are retired at once (they fire for nothing from then on)
// and detached on a library thread. A parked side that no stream takes
// within kIdleLifeMs, or that a newer one displaces, is destroyed on that
// thread too: no caller waits for the kernel to detach anything.
class KernelParking {
public:
    static constexpr int kIdleLifeMs = 1000;

    // Idles `side` and parks it for this process's next stream.
    static void park(KernelSide side);
    // The side parked by this process for streams of `config`, idle and
    // prepared for it (KernelProgram::prepare_for), if there is one; a side
    // parked for another size is released.
    static std::optional<KernelSide> take(const KernelProgram::Config &config);
    // Retires the probes of `side` (a side taken whose probes the new
    // stream cannot use) and has them detached off the caller's path.
    static void retire_probes(KernelSide &side);
};

} // namespace posixtrace
