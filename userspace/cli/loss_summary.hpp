#pragma once
#include <posix_trace/events.h>
#include <trace.h>

#include <cstdint>
#include <string>
#include <vector>

namespace posixtrace::cli {

// "N lost", saying which part of it the kernel did not report (context
// switches made without sched_switch) or skipped, since no tracer can record
// those: "N lost (K switches not reported by the kernel)".
std::string describe_losses(uint64_t lost, trace_id_t trid);

// What the stream could not follow, a sentence each (none: empty): objects
// loaded while recording (exec, dlopen) that did not get all their probes,
// and why; children forked past the table of traced processes.
std::vector<std::string> describe_left_out(trace_id_t trid);

} // namespace posixtrace::cli
