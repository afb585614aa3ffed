#pragma once
#include <sys/types.h>

namespace posixtrace {

// What following a process asks of the probes attached in what it maps.
class ProcessProbes {
public:
    virtual ~ProcessProbes() = default;
    // Attaches what is due in the objects `pid` maps now: 0 or an errno.
    virtual int refresh(pid_t pid) = 0;
    // `pid` is gone.
    virtual void forget(pid_t pid) = 0;
};

} // namespace posixtrace
