#pragma once
#include <sys/types.h>
#include <trace.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attributes/attributes.hpp"
#include "attributes/trace_origin.hpp"
#include "log/block_encoder.hpp"
#include "log/log_format.hpp"
#include "posixtrace.h"
#include "util/library_threads.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace::log {

// A block's bytes are all written before they are read, so growing it for
// the next record need not zero it first (std::allocator's resize would).
template <typename T> struct UninitializedAllocator : std::allocator<T> {
    template <typename U> struct rebind {
        using other = UninitializedAllocator<U>;
    };
    UninitializedAllocator() = default;
    template <typename U> UninitializedAllocator(const UninitializedAllocator<U> &) noexcept {}
    template <typename U> void construct(U *at) noexcept { ::new (static_cast<void *>(at)) U; }
    template <typename U, typename... Args> void construct(U *at, Args &&...args)
    {
        ::new (static_cast<void *>(at)) U(std::forward<Args>(args)...);
    }
};
using BlockBytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

// What the trailer records when the stream is shut down.
struct FinalState {
    posix_trace_status_info status;
    uint64_t recorded;
    uint64_t lost_in_kernel;
    uint64_t lost_in_stream;
    std::vector<NamedType> types;
};

// Writes a trace log (docs/log-format.md) for one stream. The stream encodes
// events into blocks under its own lock (a memcpy); a writing thread of ours
// checksums and writes them, so a slow disk never stalls a getnext caller.
// The log full policy is applied when an event is appended: UNTIL_FULL
// discards what does not fit in log-max-size and ends the log with a
// POSIX_TRACE_STOP event (room for it is kept), LOOP reuses the oldest slot.
class LogWriter {
public:
    LogWriter() = default; // use create()
    using NameLookup = std::function<std::optional<std::string>(uint32_t id)>;

    // 0, EBADF (not open for writing), EINVAL (a file type the log policy
    // cannot use: LOOP needs a seekable regular file), ENOSPC, EFBIG, EIO.
    // `progress` is called from the writing thread when a block is done.
    // `run_bytes_wanted`: the stream would hand over runs of that many
    // bytes of records (submit_run()), 0 none; the log takes them unless its
    // policy or its blocks keep it from (runs_taken()).
    static int create(int fd, const Attributes &attributes, pid_t target, const TraceOrigin &origin,
                      const std::vector<NamedType> &known_types, size_t run_bytes_wanted,
                      std::function<void()> progress, std::unique_ptr<LogWriter> &out);
    ~LogWriter();
    LogWriter(const LogWriter &) = delete;
    LogWriter &operator=(const LogWriter &) = delete;

    enum class Appended {
        written,   // into the current block
        discarded, // not written: the log is full (UNTIL_FULL), or a bad id
        filled_it, // the first event the full log discards: close it now
    };
    Appended append(const pt_record &record, const void *data, const NameLookup &name_of);
    // UNTIL_FULL: the log's last event (POSIX), in the room kept for it;
    // false if it did not fit after all.
    bool append_closing_stop(const pt_record &stop, const void *data);
    // posix_trace_clear: the log becomes as create() left it. 0; EOPNOTSUPP
    // for an APPEND log (POSIX leaves it unspecified: it keeps what it has);
    // ESPIPE for one that cannot be rewritten (a pipe); or a write error.
    int reset();
    // Hands the events appended so far to the writing thread; the ticket is
    // done() once they are written (or failed). In a log of runs, every
    // event stamped before `complete_below_ns` (as the log stamps them) has
    // been appended or handed over in a run by then.
    static constexpr uint64_t kAllComplete = UINT64_MAX;
    uint64_t submit(uint64_t complete_below_ns = kAllComplete);

    // Runs: blocks the stream fills apart from the log's sequence (records
    // of the traced process's lanes, not merged) and hands over whole, so
    // that it does no work per event that a block could do once; the log's
    // blocks then overlap in time, which its version says, and a reader
    // merges them (docs/log-format.md). Only a LOOP or APPEND log whose
    // blocks have room for what the stream asked takes them: UNTIL_FULL
    // must end with the stop event of the first event that did not fit.
    bool runs_taken() const { return runs_taken_; }
    // The most bytes of records a run holds.
    size_t run_capacity() const;
    // Hands the run over; a ticket as submit() gives. Its memory is the
    // caller's, and must stay as it is until the ticket is done().
    // `complete_below_ns` as for submit(); the events appended and not
    // submitted yet count among those still to come.
    uint64_t submit_run(BlockEncoder &run, uint64_t complete_below_ns);
    bool done(uint64_t ticket) const;
    // Waits for every block, writes the trailer (with `state`, its log full
    // and overrun status replaced by the log's own) and the footer; the first
    // write error of the log's life, or 0.
    int close(const FinalState &state);

    int first_error() const;
    int take_flush_error(); // the latest error, reset by reading it
    // Events of the blocks a write error kept out of the log (the failed
    // block and every later one) since the last call.
    uint64_t take_unwritten_events();
    // posix_trace_clear: the events handed over until now were cleared, so
    // a block of theirs that fails later is no loss of the stream's.
    void forget_unwritten_events();
    bool full() const;
    bool take_overrun(); // LOOP overwrote a slot since the last call
    uint64_t events_written() const;

private:
    struct Layout {
        bool regular = false;  // a regular file, which reset() can truncate
        bool seekable = false; // pwrite at our offsets, else write() in order
        off_t base = 0;
        uint64_t data_offset = 0;
        uint32_t slot_size = 0; // LOOP
        uint64_t slot_count = 0;
        // LOOP: every slot reads as zeros until written once more (the
        // file was cut at the log's start and the slots allocated after it,
        // or cleared): a block in a slot's first round needs no padding.
        bool slots_zero = false;
    };
    struct PendingBlock {
        BlockBytes bytes;         // the block's memory, or none: a run's
        std::span<uint8_t> block; // what is written, in `bytes` or the run's memory
        uint64_t sequence;
        uint64_t ticket;
        uint32_t events;
    };

    int prepare(int fd, const Attributes &attributes);
    // The header's bytes; also decides where the first block goes
    // (layout_.data_offset), which reserve_space() needs.
    std::vector<uint8_t> header_bytes(const Attributes &attributes, pid_t target,
                                      const TraceOrigin &origin,
                                      const std::vector<NamedType> &types);
    int end_file_at_base();
    int reserve_space();
    void release_reserved_space(uint64_t log_end);
    size_t payload_capacity() const;
    bool reserve(size_t bytes, bool closing_stop);
    int forget_written_blocks();
    void start_block();
    BlockBytes take_spare();
    uint64_t queue_block(BlockEncoder &block, BlockBytes &&memory, uint64_t complete_below_ns);
    void write_loop(std::stop_token stop);
    void write_block(PendingBlock &block);
    void keep_spare_locked(BlockBytes &&bytes);
    int write_at(uint64_t offset, const uint8_t *bytes, size_t length);
    int write_zeros(uint64_t offset, size_t length);
    void note_error(int err);
    void count_unwritten_locked(const PendingBlock &block);

    Attributes attributes_{};
    Layout layout_;
    UniqueFd fd_;
    std::function<void()> progress_;

    // Filled by the stream (append/submit), one block at a time.
    BlockBytes current_memory_;
    BlockEncoder current_;
    bool runs_taken_ = false; // the log's blocks may overlap (version 2)
    uint64_t next_sequence_ = 0;
    uint64_t reserved_bytes_ = 0; // UNTIL_FULL: bytes the blocks take in the log
    uint64_t discarded_ = 0;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<PendingBlock> queue_;
    std::vector<BlockBytes> spare_blocks_; // written, their memory kept
    size_t queued_bytes_ = 0;
    uint64_t next_ticket_ = 1;
    uint64_t written_ticket_ = 0;
    uint64_t end_offset_ = 0; // sequential: where the next block goes
    uint64_t events_written_ = 0;
    uint64_t unwritten_events_ = 0;    // since take_unwritten_events()
    uint64_t counted_from_ticket_ = 0; // earlier blocks were cleared
    int first_error_ = 0;
    int flush_error_ = 0;
    bool full_ = false;
    bool overrun_ = false;     // since take_overrun()
    bool overwritten_ = false; // ever: the trailer's log overrun status
    LibraryThreads::Thread writer_;
};

} // namespace posixtrace::log
