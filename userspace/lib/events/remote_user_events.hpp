#pragma once
#include <sys/types.h>
#include <trace.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace posixtrace {

// Reads `size` bytes at `address` of a process; false when it cannot.
using MemoryReader = std::function<bool(uint64_t address, void *into, size_t size)>;

// Appends to `names` the names of the table (user_event_table.hpp) at
// `address` past the ones it holds: as many as the table's count says,
// clamped to TRACE_USER_EVENT_MAX, each cut at TRACE_EVENT_NAME_MAX - 1
// bytes; up to the first that cannot be read. A table whose magic or version
// is not ours gives none. The bytes are the process's: any value is handled.
void read_user_event_names(const MemoryReader &read, uint64_t address,
                           std::vector<std::string> &names);

// The link-time address of `symbol` (in .dynsym or .symtab) and the address
// at which the first loadable segment maps file offset 0, from the ELF file
// at `path`; false when the file has neither.
bool symbol_and_first_load(const std::string &path, const char *symbol, uint64_t &value,
                           uint64_t &first_load);

// The user event names registered by another process (a traced process
// linked with libposixtrace), read from its published table
// (user_event_table.hpp) with process_vm_readv. The table is re-read when an
// id not seen yet is asked for, so names registered after attaching are found
// too while the process lives; names read before it exits stay known.
class RemoteUserEventNames {
public:
    // `object`: the path, as in /proc/PID/maps, of the libposixtrace the
    // process maps (or of its executable when linked statically).
    RemoteUserEventNames(pid_t pid, std::string object);

    std::optional<std::string> name_of(trace_event_id_t id);
    std::vector<trace_event_id_t> ids();
    // What was read so far (the name of id POSIX_TRACE_USER_EVENT_FIRST + i
    // at i), without reading again.
    const std::vector<std::string> &names_read() const { return names_; }
    // Takes back what reads after the first `count` names added.
    void forget_names_after(size_t count)
    {
        if (count < names_.size())
            names_.resize(count);
    }

private:
    bool locate();
    void refresh();

    pid_t pid_;
    std::string object_;
    uint64_t address_ = 0; // of the table in the process, 0 until located
    bool locate_failed_ = false;
    std::vector<std::string> names_;
};

} // namespace posixtrace
