#pragma once
#include <sys/types.h>

namespace posixtrace {

// getpid() without a system call (glibc no longer caches it): every
// getnext call checks that the stream belongs to this process, not to the
// parent of a fork. Kept right across fork() by an atfork handler.
pid_t current_process_id();

} // namespace posixtrace
