#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>
#include <string>

namespace posixtrace::cli {

// "N lost", saying which part of it the kernel did not report (context
// switches made without sched_switch) or skipped, since no tracer can record
// those: "N lost (K switches not reported by the kernel)".
std::string describe_losses(uint64_t lost, trace_id_t trid);

// Empty, or a sentence saying that objects loaded while recording (exec,
// dlopen) did not get all their probes, and why.
std::string describe_unattached(trace_id_t trid);

} // namespace posixtrace::cli
