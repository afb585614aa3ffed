#include "util/process_id.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace posixtrace {
namespace {

std::atomic<pid_t> cached_pid{0};

void refresh()
{
    cached_pid.store(getpid(), std::memory_order_relaxed);
}

const bool registered = [] {
    refresh();
    pthread_atfork(nullptr, nullptr, refresh);
    return true;
}();

} // namespace

pid_t current_process_id()
{
    pid_t pid = cached_pid.load(std::memory_order_relaxed);
    if (pid == 0) { // called before this file's static initialisation
        refresh();
        pid = cached_pid.load(std::memory_order_relaxed);
    }
    return pid;
}

} // namespace posixtrace
