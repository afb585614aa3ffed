#include "util/library_threads.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

#include "util/clock.hpp"
#include "util/immortal.hpp"

namespace posixtrace {
namespace {

// Gone threads are kept this long, for the streams still draining their
// events (the kernel reaps a thread within an RCU grace period).
constexpr uint64_t kForgetAfterNs = 30'000'000'000;

std::mutex registry_mutex;
std::atomic<uint64_t> registry_generation{1};
std::atomic<uint64_t> serials{0};

LibraryThreads::Snapshot &registry() // guarded by registry_mutex
{
    static Immortal<LibraryThreads::Snapshot> threads; // threads end during exit
    return threads.get();
}

[[maybe_unused]] const int forgotten_at_fork =
    pthread_atfork(nullptr, nullptr, LibraryThreads::forget_threads_in_child);

} // namespace

uint64_t LibraryThreads::now_ns()
{
    return clock_nanos(CLOCK_MONOTONIC);
}

uint64_t LibraryThreads::next_serial()
{
    return serials.fetch_add(1, std::memory_order_relaxed) + 1;
}

void LibraryThreads::set_name(std::jthread &thread, const char *name)
{
    pthread_setname_np(thread.native_handle(), name); // for top, ps -L
}

LibraryThreads::Membership::Membership(uint64_t serial, const char *name, uint64_t spawned_ns)
    : serial_(serial)
{
    std::lock_guard lock(registry_mutex);
    auto &threads = registry().threads_;
    uint64_t now = now_ns();
    std::erase_if(threads, [&](const Snapshot::Lifetime &life) {
        return life.gone_ns && now - life.gone_ns > kForgetAfterNs;
    });
    threads.push_back({serial, gettid(), name, spawned_ns, 0, 0});
    registry().generation_ = ++registry_generation;
}

LibraryThreads::Membership::~Membership()
{
    std::lock_guard lock(registry_mutex);
    for (auto &life : registry().threads_)
        if (life.serial == serial_)
            life.ended_ns = now_ns();
    registry().generation_ = ++registry_generation;
}

void LibraryThreads::forget_threads_in_child()
{
    ::new (static_cast<void *>(&registry_mutex)) std::mutex;
    registry().threads_.clear();
    registry().generation_ = ++registry_generation;
}

void LibraryThreads::mark_gone(uint64_t serial)
{
    uint64_t joined_ns = now_ns(); // after the join: the thread ran its last user code
    std::lock_guard lock(registry_mutex);
    for (auto &life : registry().threads_)
        if (life.serial == serial)
            life.gone_ns = joined_ns;
    registry().generation_ = ++registry_generation;
}

void LibraryThreads::Thread::join()
{
    thread_.join();
    mark_gone(serial_);
}

LibraryThreads::Thread &LibraryThreads::Thread::operator=(Thread &&other)
{
    if (this != &other) {
        if (joinable()) {
            request_stop();
            join();
        }
        thread_ = std::move(other.thread_);
        serial_ = other.serial_;
    }
    return *this;
}

LibraryThreads::Thread::~Thread()
{
    if (joinable()) {
        request_stop();
        join();
    }
}

void LibraryThreads::refresh(Snapshot &snapshot)
{
    if (snapshot.generation_ == registry_generation.load(std::memory_order_acquire))
        return;
    std::lock_guard lock(registry_mutex);
    snapshot = registry();
}

// Until the join, the tid is the library thread's. After it, only the
// kernel's last events about the thread can still come, and they carry its
// name; a thread that got the tid since carries its creator's name (the
// library's threads create none).
bool LibraryThreads::Snapshot::hides(pid_t tid, uint64_t timestamp_ns, const char *name) const
{
    for (const auto &life : threads_) {
        if (life.tid != tid || timestamp_ns < life.spawned_ns)
            continue;
        if (!life.gone_ns || timestamp_ns < life.gone_ns)
            return true;
        if (name && std::strncmp(name, life.name.c_str(), 16) == 0)
            return true;
    }
    return false;
}

uint64_t LibraryThreads::Snapshot::alive_at(uint64_t timestamp_ns) const
{
    return uint64_t(std::count_if(threads_.begin(), threads_.end(), [&](const Lifetime &life) {
        return life.spawned_ns <= timestamp_ns && (!life.ended_ns || timestamp_ns < life.ended_ns);
    }));
}

} // namespace posixtrace
