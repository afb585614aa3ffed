#pragma once
#include <sys/types.h>
#include <trace.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/process_files.hpp"

namespace posixtrace {

// The user event names registered by another process (a traced process
// linked with libposixtrace), read from its published table
// (user_event_table.hpp) with process_vm_readv. The table is re-read when an
// id not seen yet is asked for, so names registered after attaching are found
// too while the process lives; names read before it exits stay known.
class RemoteUserEventNames {
public:
    // `object`: the libposixtrace the process maps (or its executable when
    // linked statically), opened and named as in /proc/PID/maps.
    RemoteUserEventNames(pid_t pid, ProcessFile object);

    std::optional<std::string> name_of(trace_event_id_t id);
    std::vector<trace_event_id_t> ids();

private:
    bool locate();
    void refresh();

    pid_t pid_;
    ProcessFile object_;
    uint64_t address_ = 0; // of the table in the process, 0 until located
    bool locate_failed_ = false;
    std::vector<std::string> names_;
};

} // namespace posixtrace
