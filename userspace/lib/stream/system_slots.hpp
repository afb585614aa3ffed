#pragma once
#include "util/unique_fd.hpp"

namespace posixtrace {

// One of the TRACE_SYS_MAX stream slots of the whole system, held as an
// exclusive flock on a file under /run/posixtrace: the kernel releases it
// when the holder dies, so a crashed tracer never leaks a slot.
class SystemSlot {
public:
    // 0, or EAGAIN when every slot is taken.
    static int acquire(SystemSlot &slot);
    void release() { lock_.reset(); }

private:
    UniqueFd lock_;
};

} // namespace posixtrace
