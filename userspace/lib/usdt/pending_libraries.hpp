#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace posixtrace {

// The shared libraries a process is about to load, when it is held before
// its dynamic linker ran (stopped at its exec, as `posixtrace record -- CMD`
// holds it): probes attached in them now fire from their first call. Empty
// when the process has loaded its libraries already, is static, or lives in
// another root or mount namespace. Paths as the process (and /proc/PID/maps)
// will name them.
//
// The list comes from the process's own dynamic linker run with --list
// (what ldd does) and the process's LD_LIBRARY_PATH and LD_PRELOAD; that
// linker is run only when root owns it and nobody else can write it.
std::vector<std::string> pending_libraries(pid_t pid);

} // namespace posixtrace
