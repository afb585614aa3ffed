#include "stream/kernel_parking.hpp"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "util/immortal.hpp"
#include "util/library_threads.hpp"
#include "util/process_id.hpp"

namespace posixtrace {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdleLife = std::chrono::milliseconds(KernelParking::kIdleLifeMs);

// Displaced sides waiting for the releasing thread, at most: past that the
// caller destroys the one it displaced, so a process that ends streams
// faster than the kernel detaches probes holds a bounded number of them.
constexpr size_t kMostWaitingRelease = 2;

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
        // A child must not inherit the lock held by a thread it lacks.
        pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                       [] { instance().mutex_.unlock(); });
    }

    void park(KernelSide side)
    {
        side.program->go_idle();
        KernelSide displaced; // destroyed here, outside the lock
        std::lock_guard lock(mutex_);
        settle_after_fork_locked();
        if (parked_ && doomed_.size() < kMostWaitingRelease)
            doomed_.push_back(std::move(*parked_));
        else if (parked_)
            displaced = std::move(*parked_);
        parked_ = std::move(side);
        parked_at_ = Clock::now();
        wake_releaser_locked();
    }

    std::optional<KernelSide> take(const KernelProgram::Config &config)
    {
        std::lock_guard lock(mutex_);
        settle_after_fork_locked();
        if (!parked_ || !parked_->program->loaded_as(config))
            return std::nullopt;
        KernelSide side = std::move(*parked_);
        parked_.reset();
        side.program->prepare_for(config);
        return side; // the releasing thread finds nothing parked and ends
    }

private:
    // A forked child holds copies of its parent's sides and thread handle:
    // the sides' probes are attached for the parent, the thread is not
    // there. They are kept, never used.
    void settle_after_fork_locked()
    {
        pid_t now = current_process_id();
        if (owner_ == now)
            return;
        if (owner_ != 0) {
            if (parked_)
                inherited_.push_back(std::move(*parked_));
            parked_.reset();
            for (auto &side : doomed_)
                inherited_.push_back(std::move(side));
            doomed_.clear();
            inherited_threads_.push_back(std::move(releaser_));
            releaser_running_ = false;
        }
        owner_ = now;
    }

    void wake_releaser_locked()
    {
        if (releaser_running_) {
            wake_.notify_one();
            return;
        }
        if (releaser_.joinable())
            releaser_.join(); // it ended: it no longer needs the lock
        releaser_ = LibraryThreads::start("posixtrace-rel",
                                          [this](std::stop_token) { release_until_idle(); });
        releaser_running_ = true;
    }

    void release_until_idle()
    {
        std::unique_lock lock(mutex_);
        for (;;) {
            if (!doomed_.empty()) {
                KernelSide side = std::move(doomed_.back());
                doomed_.pop_back();
                lock.unlock();
                side.probes.reset(); // they refer to the program
                side.program.reset();
                lock.lock();
            } else if (parked_ && Clock::now() >= parked_at_ + kIdleLife) {
                doomed_.push_back(std::move(*parked_));
                parked_.reset();
            } else if (parked_) {
                wake_.wait_until(lock, parked_at_ + kIdleLife);
            } else {
                releaser_running_ = false;
                return;
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    pid_t owner_ = 0;
    std::optional<KernelSide> parked_;
    Clock::time_point parked_at_;
    std::vector<KernelSide> doomed_;
    LibraryThreads::Thread releaser_;
    bool releaser_running_ = false;
    std::vector<KernelSide> inherited_;
    std::vector<LibraryThreads::Thread> inherited_threads_;
};

} // namespace

void KernelParking::park(KernelSide side)
{
    Lot::instance().park(std::move(side));
}

std::optional<KernelSide> KernelParking::take(const KernelProgram::Config &config)
{
    return Lot::instance().take(config);
}

} // namespace posixtrace
