#include "sources/kernel/kernel_parking.hpp"

#include <pthread.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <vector>

#include "util/immortal.hpp"
#include "util/library_threads.hpp"

namespace posixtrace {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdleLife = std::chrono::milliseconds(KernelParking::kIdleLifeMs);

// The kernel detaches a uprobe under a global mutex that attaching one
// needs too, for two RCU grace periods: a stream set up while its process
// releases probes would wait for each. So the releasing thread starts
// nothing until the process's latest set-up is this old.
constexpr auto kQuietBeforeRelease = std::chrono::milliseconds(KernelParking::kIdleLifeMs);
// Detaching also holds every fork of the system for a grace period (the
// kernel's dup_mmap_sem); one after the other, the detachments of a
// stream's probes held a fork 550-750 ms, and with this pause between two
// of them, 110-230 ms at most.
constexpr auto kBetweenDetachments = std::chrono::milliseconds(50);

// Sides, and probes retired, waiting for the releasing thread or being
// destroyed by it, at most: past that the caller destroys what it let go,
// so a process that ends streams faster than the kernel detaches probes
// holds a bounded number (each probe holds two descriptors).
constexpr size_t kMostBeingReleased = 2;
constexpr size_t kMostRetiredProbes = 128;

// What one process parked and is releasing.
struct Parked {
    std::optional<KernelSide> side;
    std::vector<KernelSide> doomed;
    std::vector<KernelProgram::RetiredProbes> retired;
    size_t being_destroyed = 0; // by the releasing thread, out of `doomed`
    size_t retired_probes = 0;  // links in `retired` and being detached
    Clock::time_point last_set_up{};
    LibraryThreads::Thread releaser;
    bool releaser_running = false;
};

class Lot {
public:
    // The releasing thread may still be detaching probes when the process
    // exits (the kernel frees what is left then).
    static Lot &instance()
    {
        static Immortal<Lot> lot;
        return lot.get();
    }

    Lot()
    {
        pthread_atfork(nullptr, nullptr, [] { instance().start_afresh_in_child(); });
    }

    void park(KernelSide side)
    {
        KernelSide unreleased; // destroyed here, outside the lock
        std::lock_guard lock(mutex_);
        Parked &parked = parked_locked();
        unpark_locked(parked, unreleased);
        parked.side = std::move(side);
        wake_releaser_locked(parked);
    }

    void detach(KernelProgram::RetiredProbes probes)
    {
        KernelProgram::RetiredProbes undetached; // detached here, outside the lock
        std::lock_guard lock(mutex_);
        Parked &parked = parked_locked();
        if (parked.retired_probes + probes.links.size() > kMostRetiredProbes) {
            undetached = std::move(probes);
            return;
        }
        parked.retired_probes += probes.links.size();
        parked.retired.push_back(std::move(probes));
        wake_releaser_locked(parked);
    }

    std::optional<KernelSide> take(const KernelProgram::Config &config)
    {
        KernelSide unreleased; // destroyed here, outside the lock
        std::lock_guard lock(mutex_);
        Parked &parked = parked_locked();
        parked.last_set_up = Clock::now(); // a stream is being set up
        if (!parked.side)
            return std::nullopt;
        if (!parked.side->program->loaded_as(config)) { // streams of another size now
            unpark_locked(parked, unreleased);
            return std::nullopt;
        }
        KernelSide side = std::move(*parked.side);
        parked.side.reset();
        side.program->prepare_for(config);
        return side; // the releasing thread finds nothing parked and ends
    }

private:
    Parked &parked_locked()
    {
        if (!parked_)
            parked_ = std::make_unique<Parked>();
        return *parked_;
    }

    // The parked side goes to the releasing thread, or to `unreleased` for
    // the caller to destroy when that thread has enough to do.
    void unpark_locked(Parked &parked, KernelSide &unreleased)
    {
        if (!parked.side)
            return;
        if (parked.doomed.size() + parked.being_destroyed < kMostBeingReleased) {
            parked.doomed.push_back(std::move(*parked.side));
            wake_releaser_locked(parked);
        } else {
            unreleased = std::move(*parked.side);
        }
        parked.side.reset();
    }

    // In a child of fork, which may have been called while another thread
    // of the parent held the lock or changed the parked state (or from a
    // signal handler that interrupted this very code): the lock is made
    // anew, and the parent's state is left untouched, never used (its
    // probes are attached for the parent, its thread is not here), kept
    // where the leak checker sees it.
    void start_afresh_in_child()
    {
        ::new (static_cast<void *>(&mutex_)) std::mutex;
        left_by_parents_[forks_seen_++ % left_by_parents_.size()] = parked_.release();
    }

    void wake_releaser_locked(Parked &parked)
    {
        if (parked.releaser_running) {
            wake_.notify_one();
            return;
        }
        if (parked.releaser.joinable())
            parked.releaser.join(); // it ended: it no longer needs the lock
        parked.releaser = LibraryThreads::start(
            "posixtrace-rel", [this, &parked](std::stop_token) { release_until_idle(parked); });
        parked.releaser_running = true;
    }

    void release_until_idle(Parked &parked)
    {
        std::unique_lock lock(mutex_);
        for (;;) {
            bool work = !parked.retired.empty() || !parked.doomed.empty();
            if (work && Clock::now() < parked.last_set_up + kQuietBeforeRelease) {
                wake_.wait_until(lock, parked.last_set_up + kQuietBeforeRelease);
            } else if (!parked.retired.empty()) {
                auto &links = parked.retired.back().links;
                KernelProgram::Link link = std::move(links.back());
                links.pop_back();
                if (links.empty())
                    parked.retired.pop_back();
                lock.unlock();
                link.reset();
                lock.lock();
                --parked.retired_probes;
                wake_.wait_for(lock, kBetweenDetachments);
            } else if (!parked.doomed.empty()) {
                KernelSide side = std::move(parked.doomed.back());
                parked.doomed.pop_back();
                ++parked.being_destroyed;
                lock.unlock();
                side.probes.reset(); // they refer to the program
                // Its probes are detached one by one, as the retired ones,
                // while as few wait as the callers' retired ones may.
                KernelProgram::RetiredProbes probes = side.program->retire_probes();
                side.program.reset();
                lock.lock();
                --parked.being_destroyed;
                if (parked.retired_probes + probes.links.size() > kMostRetiredProbes) {
                    lock.unlock();
                    probes.links.clear();
                    lock.lock();
                } else if (!probes.links.empty()) {
                    parked.retired_probes += probes.links.size();
                    parked.retired.push_back(std::move(probes));
                }
            } else if (parked.side && Clock::now() >= parked.side->idle_since + kIdleLife) {
                parked.doomed.push_back(std::move(*parked.side));
                parked.side.reset();
            } else if (parked.side) {
                wake_.wait_until(lock, parked.side->idle_since + kIdleLife);
            } else {
                parked.releaser_running = false;
                return;
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::unique_ptr<Parked> parked_;
    std::array<Parked *, 8> left_by_parents_{};
    size_t forks_seen_ = 0;
};

} // namespace

void KernelParking::park(KernelSide side)
{
    side.program->go_idle();
    if (!side.probes || !side.probes->reusable())
        retire_probes(side);
    side.idle_since = Clock::now();
    Lot::instance().park(std::move(side));
}

std::optional<KernelSide> KernelParking::take(const KernelProgram::Config &config)
{
    return Lot::instance().take(config);
}

void KernelParking::retire_probes(KernelSide &side)
{
    side.probes.reset(); // it refers to the program's probes, gone now
    KernelProgram::RetiredProbes retired = side.program->retire_probes();
    if (!retired.links.empty())
        Lot::instance().detach(std::move(retired));
}

} // namespace posixtrace
