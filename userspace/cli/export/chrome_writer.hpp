#pragma once
// The Trace Event Format of chrome://tracing and Perfetto: one JSON object
// {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "event_writer.hpp"
#include "output_file.hpp"

namespace posixtrace::cli {

// Writes events as they come (memory grows with threads, not events):
// - every event is an instant event ("ph":"i") on its thread's track, with
//   the fields `dump --json` prints as its args; events the implementation
//   generates (tid 0) are process-wide instants;
// - a thread's td_switchto opens a "running" slice ("B") on its track, and
//   its next td_switchfrom, td_sleep, td_preempt or td_idle closes it ("E");
// - timestamps are microseconds since the first event, whose CLOCK_REALTIME
//   time is in otherData;
// - at the end, process_name and thread_name metadata events ("ph":"M"):
//   for a process the path its process_exec gave, else its main thread's
//   name, else "pid N"; for a thread the comm its latest TD event carried,
//   else "tid N".
class ChromeWriter : public EventWriter {
public:
    ChromeWriter(std::string path, LogDescription description);
    void write(const LoggedEvent &event) override;
    void finish() override;

private:
    using ThreadKey = std::pair<pid_t, pid_t>; // pid, tid
    void remember_names(const LoggedEvent &event);
    void follow_running_slices(const LoggedEvent &event);
    void write_instant(const LoggedEvent &event);
    void write_slice_edge(const char *phase, pid_t pid, pid_t tid, uint64_t ns,
                          const std::string &args);
    std::string process_name(pid_t pid) const;
    void write_names();
    void write_other_data();
    void append(const std::string &trace_event);
    std::string relative_microseconds(uint64_t ns) const;

    OutputFile out_;
    LogDescription description_;
    bool empty_ = true;
    std::optional<uint64_t> origin_ns_;
    uint64_t last_ns_ = 0;
    std::map<pid_t, std::string> process_names_;
    std::map<ThreadKey, std::string> thread_names_;
    std::set<ThreadKey> running_;
};

} // namespace posixtrace::cli
