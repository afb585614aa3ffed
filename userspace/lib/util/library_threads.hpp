#pragma once
#include <sys/types.h>

#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

namespace posixtrace {

// The threads libposixtrace runs in this process (drain, log writer): the
// trace system never traces itself, so a stream of this process leaves out
// every event about them and does not count them in td_concurrency
// (docs/architecture.md, "The library's own threads").
class LibraryThreads {
public:
    // Starts `body` on a library thread named `name`.
    template <class Body> static std::jthread start(const char *name, Body body)
    {
        uint64_t spawned_ns = now_ns(); // before the clone: its td_create comes after
        std::jthread thread([spawned_ns, body = std::move(body)](std::stop_token stop) mutable {
            Membership member(spawned_ns);
            body(stop);
        });
        set_name(thread, name);
        return thread;
    }

    // The library threads as of one moment, asked without a lock: a stream
    // takes one per drain pass (the registry changes only when a stream or a
    // log comes or goes).
    class Snapshot {
    public:
        // Whether thread `tid` of this process was a library thread at
        // `timestamp_ns` (CLOCK_MONOTONIC), or is one whose last events these are.
        bool hides(pid_t tid, uint64_t timestamp_ns) const;
        // Library threads alive at `timestamp_ns`.
        uint64_t alive_at(uint64_t timestamp_ns) const;

    private:
        friend class LibraryThreads;
        struct Lifetime {
            pid_t tid;
            uint64_t spawned_ns;
            uint64_t ended_ns; // 0 while alive
        };
        std::vector<Lifetime> threads_;
        uint64_t generation_ = 0;
    };
    // Refreshes `snapshot` if the registry changed since it was taken.
    static void refresh(Snapshot &snapshot);

private:
    class Membership {
    public:
        explicit Membership(uint64_t spawned_ns);
        ~Membership();
        Membership(const Membership &) = delete;
        Membership &operator=(const Membership &) = delete;

    private:
        pid_t tid_;
    };
    static uint64_t now_ns();
    static void set_name(std::jthread &thread, const char *name);
};

} // namespace posixtrace
