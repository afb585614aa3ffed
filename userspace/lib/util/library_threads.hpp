#pragma once
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace posixtrace {

// The threads libposixtrace runs in this process (drain, log writer): the
// trace system never traces itself, so a stream of this process leaves out
// every event about them and does not count them in td_concurrency
// (docs/architecture.md, "The library's own threads").
//
// The kernel hands a tid out again as soon as its thread is gone (pid_max is
// 32768 on small machines), so a tid alone does not say whose an event is. A
// library thread owns its tid from just before its clone until its owner has
// joined it; the kernel's last words about it (its death, its last switch,
// its reaping) can come later, and carry its name.
class LibraryThreads {
public:
    class Thread;
    // Starts `body` on a library thread named `name` (at most 15 characters).
    template <class Body> static Thread start(const char *name, Body body);
    // Called in a child of fork, where only the forking thread exists: none
    // of the library's threads came along (a stream of the child would count
    // them among its threads), and the lock stays held if one of them held it.
    static void forget_threads_in_child();

    // The library threads as of one moment, asked without a lock: a stream
    // takes one per drain pass (the registry changes only when a stream or a
    // log comes or goes).
    class Snapshot {
    public:
        // Whether an event by or about thread `tid` of this process, stamped
        // `timestamp_ns` (CLOCK_MONOTONIC), is a library thread's. `name`:
        // the thread's name the event carries (thread events), else nullptr.
        bool hides(pid_t tid, uint64_t timestamp_ns, const char *name) const;
        // Library threads alive at `timestamp_ns`.
        uint64_t alive_at(uint64_t timestamp_ns) const;

    private:
        friend class LibraryThreads;
        struct Lifetime {
            uint64_t serial;
            pid_t tid;
            std::string name;
            uint64_t spawned_ns; // before its clone
            uint64_t ended_ns;   // its body returned; 0 before
            uint64_t gone_ns;    // joined: its tid may be another's; 0 before
        };
        std::vector<Lifetime> threads_;
        uint64_t generation_ = 0;
    };
    // Refreshes `snapshot` if the registry changed since it was taken.
    static void refresh(Snapshot &snapshot);

    // Owns the thread; joining it (or destroying a joinable one) records
    // when its tid stopped being the library's.
    class Thread {
    public:
        Thread() = default;
        Thread(Thread &&) = default;
        Thread &operator=(Thread &&other);
        ~Thread();
        bool joinable() const { return thread_.joinable(); }
        void request_stop() { thread_.request_stop(); }
        void join();

    private:
        friend class LibraryThreads;
        Thread(std::jthread thread, uint64_t serial) : thread_(std::move(thread)), serial_(serial)
        {
        }
        std::jthread thread_;
        uint64_t serial_ = 0;
    };

private:
    class Membership {
    public:
        Membership(uint64_t serial, const char *name, uint64_t spawned_ns);
        ~Membership();
        Membership(const Membership &) = delete;
        Membership &operator=(const Membership &) = delete;

    private:
        uint64_t serial_;
    };
    // Every signal blocked in the calling thread while it lives (a thread
    // it creates meanwhile inherits the mask).
    class SignalsBlocked {
    public:
        SignalsBlocked()
        {
            sigset_t all;
            sigfillset(&all);
            pthread_sigmask(SIG_BLOCK, &all, &before_);
        }
        ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
        SignalsBlocked(const SignalsBlocked &) = delete;
        SignalsBlocked &operator=(const SignalsBlocked &) = delete;

    private:
        sigset_t before_;
    };
    static uint64_t now_ns();
    static uint64_t next_serial();
    static void set_name(std::jthread &thread, const char *name);
    static void mark_gone(uint64_t serial);
};

template <class Body> LibraryThreads::Thread LibraryThreads::start(const char *name, Body body)
{
    uint64_t serial = next_serial();
    uint64_t spawned_ns = now_ns(); // before the clone: its td_create comes after
    // Born with every signal blocked: a handler of the application's that
    // ran on the library's thread could wait for that very thread (an exec
    // that flushes the log waits for the drain), or take the locks it holds.
    std::optional<std::jthread> thread;
    {
        SignalsBlocked blocked;
        thread.emplace(
            [serial, name, spawned_ns, body = std::move(body)](std::stop_token stop) mutable {
                Membership member(serial, name, spawned_ns);
                body(stop);
            });
    }
    set_name(*thread, name);
    return Thread(std::move(*thread), serial);
}

} // namespace posixtrace
