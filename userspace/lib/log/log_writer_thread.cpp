// LogWriter: the writing thread. It checksums and writes the blocks the
// stream queued, in order, and gives their memory back for the next.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "log/log_writer.hpp"

namespace posixtrace::log {
namespace {

// Written blocks kept for the next ones to fill: a block taken fresh from
// the allocator is fresh pages, and faulting them in took a third of the
// drain's time in a burst. Past this, the writer frees them.
constexpr size_t kSpareBlockBytes = 4u << 20;
constexpr size_t kSpareBlocksAtLeast = 2;

// A write to a pipe whose reader left raises SIGPIPE, and one past the file
// size limit SIGXFSZ; both kill the process by default. A library must not
// kill its caller over a log: while one of its writes runs they are blocked,
// the write fails with EPIPE / EFBIG instead, and the signal it raised (sent
// to this thread) is taken back.
class QuietWriteSignals {
public:
    QuietWriteSignals()
    {
        sigemptyset(&signals_);
        sigaddset(&signals_, SIGPIPE);
        sigaddset(&signals_, SIGXFSZ);
        pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
    }
    ~QuietWriteSignals()
    {
        sigset_t pending;
        sigpending(&pending);
        timespec now{};
        for (int signal : {SIGPIPE, SIGXFSZ})
            if (sigismember(&pending, signal) && !sigismember(&previous_, signal)) {
                sigset_t one;
                sigemptyset(&one);
                sigaddset(&one, signal);
                sigtimedwait(&one, nullptr, &now);
            }
        pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    }
    QuietWriteSignals(const QuietWriteSignals &) = delete;
    QuietWriteSignals &operator=(const QuietWriteSignals &) = delete;

private:
    sigset_t signals_;
    sigset_t previous_;
};

} // namespace

// ---- the writing thread ----------------------------------------------------------

void LogWriter::write_loop(std::stop_token stop)
{
    for (;;) {
        PendingBlock block;
        {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] { return !queue_.empty() || stop.stop_requested(); });
            if (queue_.empty())
                return;
            block = std::move(queue_.front());
            queue_.pop_front();
        }
        size_t queued = block.block.size();
        write_block(block);
        {
            std::lock_guard lock(mutex_);
            queued_bytes_ -= queued;
            written_ticket_ = block.ticket;
            if (block.bytes.capacity())
                keep_spare_locked(std::move(block.bytes));
        }
        changed_.notify_all();
        if (progress_)
            progress_();
    }
}

void LogWriter::keep_spare_locked(BlockBytes &&bytes)
{
    if (spare_blocks_.size() < std::max(kSpareBlocksAtLeast, kSpareBlockBytes / bytes.capacity()))
        spare_blocks_.push_back(std::move(bytes));
}

void LogWriter::write_block(PendingBlock &block)
{
    std::span<uint8_t> bytes = block.block;
    store<uint32_t>(bytes.data() + 4, crc32_of(bytes.data() + 8, bytes.size() - 8));
    uint64_t offset;
    if (layout_.slot_size)
        offset = layout_.data_offset + (block.sequence % layout_.slot_count) * layout_.slot_size;
    else
        offset = end_offset_;
    {
        std::lock_guard lock(mutex_);
        if (first_error_) { // the log ended at the failed block: keep it readable
            count_unwritten_locked(block);
            return;
        }
    }
    int err = write_at(offset, bytes.data(), bytes.size());
    uint64_t end = offset + bytes.size();
    bool slot_zero = layout_.slots_zero && block.sequence < layout_.slot_count;
    if (!err && layout_.slot_size && !slot_zero) { // clears what the slot held before
        end = offset + layout_.slot_size;
        err = write_zeros(offset + bytes.size(), end - offset - bytes.size());
    }
    std::lock_guard lock(mutex_);
    if (err) {
        note_error(err);
        count_unwritten_locked(block);
        return;
    }
    end_offset_ = end;
    events_written_ += block.events;
    if (layout_.slot_size && block.sequence >= layout_.slot_count) {
        full_ = true;
        overrun_ = true;
        overwritten_ = true;
    }
}

void LogWriter::note_error(int err)
{
    if (!first_error_)
        first_error_ = err;
    flush_error_ = err;
}

int LogWriter::write_zeros(uint64_t offset, size_t length)
{
    static const uint8_t zeros[64 * 1024] = {};
    for (size_t part; length; length -= part, offset += part) {
        part = std::min(length, sizeof zeros);
        if (int err = write_at(offset, zeros, part))
            return err;
    }
    return 0;
}

int LogWriter::write_at(uint64_t offset, const uint8_t *bytes, size_t length)
{
    QuietWriteSignals quiet;
    while (length) {
        ssize_t n = layout_.seekable
                        ? pwrite(fd_.get(), bytes, length, layout_.base + off_t(offset))
                        : write(fd_.get(), bytes, length);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EPIPE ? EIO : errno;
        if (n == 0)
            return ENOSPC;
        bytes += n;
        offset += uint64_t(n);
        length -= size_t(n);
    }
    return 0;
}

} // namespace posixtrace::log
