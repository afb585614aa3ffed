#include "util/library_threads.hpp"

#include <pthread.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "util/clock.hpp"

namespace posixtrace {
namespace {

// A thread's events can follow the end of its body (its last switches, its
// td_death) by this much; a tid is not reused that soon (pids cycle).
constexpr uint64_t kLastEventsNs = 1'000'000'000;
// Ended threads are kept this long, for the streams still draining their events.
constexpr uint64_t kForgetAfterNs = 30'000'000'000;

struct Lifetime {
    uint64_t spawned_ns;
    uint64_t ended_ns; // 0 while alive
};

std::mutex registry_mutex;
std::map<pid_t, Lifetime> &registry()
{
    static std::map<pid_t, Lifetime> threads;
    return threads;
}

} // namespace

uint64_t LibraryThreads::now_ns() { return clock_nanos(CLOCK_MONOTONIC); }

void LibraryThreads::set_name(std::jthread &thread, const char *name)
{
    pthread_setname_np(thread.native_handle(), name); // for top, ps -L
}

LibraryThreads::Membership::Membership(uint64_t spawned_ns) : tid_(gettid())
{
    std::lock_guard lock(registry_mutex);
    uint64_t now = now_ns();
    std::erase_if(registry(), [now](const auto &entry) {
        return entry.second.ended_ns && now - entry.second.ended_ns > kForgetAfterNs;
    });
    registry()[tid_] = {spawned_ns, 0};
}

LibraryThreads::Membership::~Membership()
{
    std::lock_guard lock(registry_mutex);
    registry()[tid_].ended_ns = now_ns();
}

bool LibraryThreads::hides(pid_t tid, uint64_t timestamp_ns)
{
    std::lock_guard lock(registry_mutex);
    auto found = registry().find(tid);
    return found != registry().end() &&
           (!found->second.ended_ns || timestamp_ns < found->second.ended_ns + kLastEventsNs);
}

uint32_t LibraryThreads::alive_at(uint64_t timestamp_ns)
{
    std::lock_guard lock(registry_mutex);
    uint32_t alive = 0;
    for (const auto &[tid, life] : registry())
        alive += life.spawned_ns <= timestamp_ns && (!life.ended_ns || timestamp_ns < life.ended_ns);
    return alive;
}

} // namespace posixtrace
