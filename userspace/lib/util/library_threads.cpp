#include "util/library_threads.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "util/clock.hpp"

namespace posixtrace {
namespace {

// A thread's events can follow the end of its body (its last switches, its
// td_death) by this much; a tid is not reused that soon (pids cycle).
constexpr uint64_t kLastEventsNs = 1'000'000'000;
// Ended threads are kept this long, for the streams still draining their events.
constexpr uint64_t kForgetAfterNs = 30'000'000'000;

std::mutex registry_mutex;
std::atomic<uint64_t> registry_generation{1};

LibraryThreads::Snapshot &registry() // guarded by registry_mutex
{
    static LibraryThreads::Snapshot threads;
    return threads;
}

} // namespace

uint64_t LibraryThreads::now_ns()
{
    return clock_nanos(CLOCK_MONOTONIC);
}

void LibraryThreads::set_name(std::jthread &thread, const char *name)
{
    pthread_setname_np(thread.native_handle(), name); // for top, ps -L
}

LibraryThreads::Membership::Membership(uint64_t spawned_ns) : tid_(gettid())
{
    std::lock_guard lock(registry_mutex);
    auto &threads = registry().threads_;
    uint64_t now = now_ns();
    std::erase_if(threads, [&](const Snapshot::Lifetime &life) {
        return life.tid == tid_ || (life.ended_ns && now - life.ended_ns > kForgetAfterNs);
    });
    threads.push_back({tid_, spawned_ns, 0});
    registry().generation_ = ++registry_generation;
}

LibraryThreads::Membership::~Membership()
{
    std::lock_guard lock(registry_mutex);
    for (auto &life : registry().threads_)
        if (life.tid == tid_ && !life.ended_ns)
            life.ended_ns = now_ns();
    registry().generation_ = ++registry_generation;
}

void LibraryThreads::refresh(Snapshot &snapshot)
{
    if (snapshot.generation_ == registry_generation.load(std::memory_order_acquire))
        return;
    std::lock_guard lock(registry_mutex);
    snapshot = registry();
}

bool LibraryThreads::Snapshot::hides(pid_t tid, uint64_t timestamp_ns) const
{
    for (const auto &life : threads_)
        if (life.tid == tid && (!life.ended_ns || timestamp_ns < life.ended_ns + kLastEventsNs))
            return true;
    return false;
}

uint64_t LibraryThreads::Snapshot::alive_at(uint64_t timestamp_ns) const
{
    return uint64_t(std::count_if(threads_.begin(), threads_.end(), [&](const Lifetime &life) {
        return life.spawned_ns <= timestamp_ns && (!life.ended_ns || timestamp_ns < life.ended_ns);
    }));
}

} // namespace posixtrace
