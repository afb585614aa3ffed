#pragma once
#include <posix_trace/thread_db.h>
#include <sys/types.h>

#include <set>

#include "posixtrace.h"
#include "threads/td_notify.hpp"

namespace posixtrace {

// The processes whose thread agent (<posix_trace/thread_db.h>) is told of
// their thread events: each such event reaching the stream calls its
// event's reporting function, where a debugger's breakpoint fires.
class ThreadAgentNotifier {
public:
    void set(pid_t pid, bool present)
    {
        if (present)
            agents_.insert(pid);
        else
            agents_.erase(pid);
    }
    bool told(pid_t pid) const { return agents_.count(pid) != 0; }
    bool empty() const { return agents_.empty(); }
    // A thread event: reported when its process's agent is told.
    void notify(const pt_record &record) const
    {
        if (told(pid_t(record.pid)))
            td_report(POSIX_TRACE_TD_EVENT_OF(record.event_id));
    }

private:
    std::set<pid_t> agents_;
};

} // namespace posixtrace
