#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace posixtrace::cli {

// Sends the batches on a thread of its own, one at a time, while the next
// is made: the server parses one while the log is read into the next. At
// most one batch waits, so memory stays at two batches. After a failure
// nothing more is sent, and the failure reaches the caller.
class BatchSender {
public:
    using Send = std::function<void(const std::string &batch, uint64_t stored_before)>;
    BatchSender(Send send, uint64_t stored)
        : send_(std::move(send)), stored_(stored), thread_([this] { run(); })
    {
    }
    ~BatchSender()
    {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        changed_.notify_all();
        thread_.join();
    }
    BatchSender(const BatchSender &) = delete;
    BatchSender &operator=(const BatchSender &) = delete;

    // Takes `batch` (left empty), whose rows end before sequence `end`;
    // throws an earlier batch's failure.
    void hand(std::string &batch, uint64_t end)
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return !waiting_ || failure_; });
        if (failure_)
            std::rethrow_exception(failure_);
        waiting_.emplace(std::move(batch), end);
        batch = std::string();
        changed_.notify_all();
    }
    // Waits for every batch handed over; returns the sequence stored up to.
    uint64_t finish()
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return (!waiting_ || failure_) && !busy_; });
        if (failure_)
            std::rethrow_exception(failure_);
        return stored_;
    }

private:
    void run()
    {
        std::unique_lock lock(mutex_);
        for (;;) {
            changed_.wait(lock, [this] { return waiting_ || done_; });
            if (!waiting_ || failure_)
                return;
            auto [batch, end] = std::move(*waiting_);
            waiting_.reset();
            busy_ = true;
            uint64_t before = stored_;
            changed_.notify_all();
            lock.unlock();
            std::exception_ptr failed;
            try {
                send_(batch, before);
            } catch (...) {
                failed = std::current_exception();
            }
            lock.lock();
            busy_ = false;
            if (failed)
                failure_ = failed;
            else
                stored_ = end;
            changed_.notify_all();
        }
    }

    Send send_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::optional<std::pair<std::string, uint64_t>> waiting_;
    bool busy_ = false, done_ = false;
    std::exception_ptr failure_;
    uint64_t stored_;
    std::thread thread_; // last: it starts once the rest is there
};

} // namespace posixtrace::cli
