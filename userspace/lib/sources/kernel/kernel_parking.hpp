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
    std::unique_ptr<ProbeAttacher> probes;              // refers to *program
    std::chrono::steady_clock::time_point idle_since{}; // parked then
};

// Loading a stream's BPF object costs tens of milliseconds (the verifier,
// the ring table's RCU grace period) and detaching its probes hundreds (two
// grace periods for each uprobe and syscall tracepoint). So a stream of the
// calling process whose user events come through its lanes parks its kernel
// side when it ends, idle (suspended, tracing nothing, its tables empty),
// and the process's next stream of the same ring size takes it as it is. A
// parked side that no stream takes within kIdleLifeMs, or that a newer one
// displaces, is destroyed on a library thread, off every caller's path.
class KernelParking {
public:
    static constexpr int kIdleLifeMs = 1000;

    // Idles `side` and parks it for this process's next stream.
    static void park(KernelSide side);
    // The side parked by this process for streams of `config`, idle and
    // prepared for it (KernelProgram::prepare_for), if there is one; a side
    // parked for another size is released.
    static std::optional<KernelSide> take(const KernelProgram::Config &config);
    // Parks again a side taken and not used (nothing traced with it yet),
    // as idle as it was since it was first parked.
    static void give_back(KernelSide side);
};

} // namespace posixtrace
