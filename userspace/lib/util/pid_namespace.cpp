#include "util/pid_namespace.hpp"

#include <sys/stat.h>

namespace posixtrace {
namespace {

// The kernel gives the first PID namespace a fixed inode number
// (PROC_PID_INIT_INO); the others get numbers above it.
constexpr ino_t kInitialPidNamespaceInode = 0xEFFFFFFCu;

} // namespace

// Without a /proc that shows this process, nothing says which namespace it
// is in: taken as not the first, so that nothing is recorded for the wrong
// process.
bool in_initial_pid_namespace()
{
    struct stat ns;
    return stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino == kInitialPidNamespaceInode;
}

} // namespace posixtrace
