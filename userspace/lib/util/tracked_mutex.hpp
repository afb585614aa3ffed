#pragma once
// A mutex that knows whether the calling thread holds one like it. A signal
// handler that execs (exec_api.cpp) must not wait for a stream's lock when
// the thread it interrupted holds that lock: it would wait for ever.
#include <atomic>
#include <mutex>

namespace posixtrace {

class TrackedMutex {
public:
    // The count goes up before the lock is taken and down after it is let
    // go: a signal handler never sees 0 while the lock is held.
    void lock()
    {
        mark(+1);
        mutex_.lock();
    }
    bool try_lock()
    {
        mark(+1);
        if (mutex_.try_lock())
            return true;
        mark(-1);
        return false;
    }
    void unlock()
    {
        mutex_.unlock();
        mark(-1);
    }

    // Whether this thread holds, or is taking, a TrackedMutex.
    // Async-signal-safe.
    static bool held_by_this_thread() { return held_by_this_thread_ != 0; }

private:
    static void mark(int change)
    {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        held_by_this_thread_ += change;
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }

    std::mutex mutex_;
    // Initial-exec: reading it in a signal handler allocates nothing.
    static constinit inline thread_local int held_by_this_thread_
        __attribute__((tls_model("initial-exec"))) = 0;
};

} // namespace posixtrace
