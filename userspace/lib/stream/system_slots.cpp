#include "stream/system_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <trace.h>

#include <cerrno>
#include <string>

namespace posixtrace {

int SystemSlot::acquire(SystemSlot &slot)
{
    const char *directory = "/run/posixtrace";
    if (mkdir(directory, 0755) != 0 && errno != EEXIST)
        directory = "/tmp";
    for (int index = 0; index < TRACE_SYS_MAX; ++index) {
        std::string path = std::string(directory) + "/stream-slot." + std::to_string(index);
        UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
        if (!fd)
            continue;
        if (flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
            slot.lock_ = std::move(fd);
            return 0;
        }
    }
    return EAGAIN;
}

} // namespace posixtrace
