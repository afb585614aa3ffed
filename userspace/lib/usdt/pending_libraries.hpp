#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace posixtrace {

// The shared libraries a process is about to load, when it is held before
// its dynamic linker ran (stopped at its exec, as `posixtrace record -- CMD`
// holds it): probes attached in them now fire from their first call. Empty
// when the process has loaded its libraries already or is static. Paths as
// the process names them, inside its root.
//
// The list is worked out the dynamic linker's way (LD_PRELOAD, DT_RPATH,
// LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache, the default directories) by
// reading files inside the process's root: nothing is run, so nothing the
// process controls runs as the tracer. A library it misses (a $LIB path, a
// relative directory) is found when the linker maps it (the link-map hook).
std::vector<std::string> pending_libraries(pid_t pid);

} // namespace posixtrace
