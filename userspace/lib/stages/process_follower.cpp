#include "stages/process_follower.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace posixtrace {

void ProcessFollower::follow(const pt_record &record, ProcessProbes *probes)
{
    if (record.cpu == PT_CPU_SYSTEM || !probes)
        return; // a system event the stream made, not the kernel
    pid_t pid = pid_t(record.pid);
    switch (record.event_id) {
    case PT_EVENT_PROCESS_FORK:
        if (record.data_len >= 12) { // the child's image follows (PT_FORK_RECORD_DATA)
            uint32_t child, child_image;
            std::memcpy(&child, record.data + 4, sizeof child);
            std::memcpy(&child_image, record.data + 12, sizeof child_image);
            user_events_.forked(pid, record.image, pid_t(child), child_image);
        }
        break;
    case PT_EVENT_PROCESS_EXEC:
        user_events_.execed(pid, record.image);
        probes->refresh(pid);
        break;
    case PT_EVENT_LINK_MAP_CHANGED:
        user_events_.objects_changed(record.image);
        probes->refresh(pid);
        break;
    case PT_EVENT_PROCESS_EXIT:
        probes->forget(pid);
        user_events_.exited(pid, record.image);
        break;
    case PT_EVENT_USER_NAME:
        if (record.data_len == sizeof(pt_user_name)) {
            pt_user_name name;
            std::memcpy(&name, record.data, sizeof name);
            user_events_.learned(
                pid, record.image, name.event_id,
                std::string(name.name, std::min<size_t>(name.length, sizeof name.name - 1)));
        }
        break;
    default:
        break;
    }
}

} // namespace posixtrace
