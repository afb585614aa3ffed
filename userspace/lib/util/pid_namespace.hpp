#pragma once

namespace posixtrace {

// Whether this process is in the system's first PID namespace. The kernel's
// programs know every process by its number there; a process in a PID
// namespace of its own (a container's) knows other numbers, which those
// programs would take for other processes of the host.
bool in_initial_pid_namespace();

} // namespace posixtrace
