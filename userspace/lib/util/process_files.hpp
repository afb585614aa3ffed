#pragma once
// The files of a traced process, opened so that what the process controls
// (its paths, symlinks and mounts) cannot lead the tracer to another file.
// Through /proc/PID/root the kernel resolves an absolute symlink against the
// *tracer's* root: a process could point the tracer at any file of the host
// (to read its notes, to attach uprobes in it). docs/security.md, "Paths".
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/unique_fd.hpp"

namespace posixtrace {

struct ProcessFile {
    UniqueFd fd;
    std::string name; // as the process's /proc/PID/maps, or its own paths, name it

    // A path that the kernel and libbpf open as this very file (the
    // descriptor's link in /proc/self/fd), valid while `fd` is open.
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd.get()); }
};

// `path` as `pid` resolves it: inside its root (openat2 with
// RESOLVE_IN_ROOT; no magic link followed), read-only. nullopt when the
// process or the file is gone, or the path leads nowhere inside that root.
std::optional<ProcessFile> open_in_root(pid_t pid, const std::string &path);

// The file mapped at [start, end) in `pid`, that its maps name `name`:
// through /proc/PID/map_files, which walks no path (it needs CAP_SYS_ADMIN);
// without it, `name` resolved inside the process's root (open_in_root).
std::optional<ProcessFile> open_mapping(pid_t pid, uint64_t start, uint64_t end,
                                        const std::string &name);

// An executable mapping of a process, as its maps say, not opened.
struct MappedExecutable {
    uint64_t start, end;
    std::string name;
};

// A process may map tens of thousands of files, each of which the tracer
// would open and parse: only the first ones are listed.
constexpr size_t kMaxMappedExecutables = 4096;

// The files `pid` maps executable, in map order (the executable first), one
// mapping each, at most kMaxMappedExecutables; deleted files are left out.
// `cut_short` (may be null) tells whether there were more.
std::vector<MappedExecutable> list_mapped_executables(pid_t pid, bool *cut_short = nullptr);

// The same files, each opened as the very file mapped: through /proc/PID/map_files, which walks
// no path (it needs CAP_SYS_ADMIN); without it, its maps name resolved
// inside the process's root (open_in_root). A mapping gone meanwhile, or a
// file that cannot be opened, is left out.
std::vector<ProcessFile> open_mapped_executables(pid_t pid);

} // namespace posixtrace
