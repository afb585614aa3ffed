#include "log/log_writer.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <posix_trace/events.h>

#include <algorithm>
#include <cerrno>

#include "events/namespace_ids.hpp"
#include "util/clock.hpp"
#include "util/library_threads.hpp"

namespace posixtrace::log {
namespace {

// Blocks of an APPEND / UNTIL_FULL log: large enough that the per-block
// header and checksum cost nothing, small enough that a reader holds one.
constexpr size_t kSequentialBlockPayload = 256 * 1024;
constexpr size_t kMaxLoopSlot = 256 * 1024; // unless the log needs more than kMaxLoopSlots
// Encoded blocks waiting for the disk; beyond this the stream waits (and
// the kernel rings absorb the burst, or count what they cannot).
constexpr size_t kMaxQueuedBytes = 64u << 20;
constexpr size_t kPageSize = 4096;
constexpr size_t kStopRecordBytes = padded8(kEventRecordHeader + sizeof(posix_trace_stop_data));

size_t name_record_bytes(const std::optional<std::string> &name)
{
    return name ? BlockEncoder::name_record_bytes(*name) : 0;
}

size_t round_up(size_t value, size_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

static_assert(kMinLogSize / 2 / 8 * 8 >= kMinLoopSlotSize, "the smallest log's slots");

// LOOP slots: about a quarter of the log each, so overwriting one loses at
// most a quarter of the history, and at least two of them; page-sized and
// large enough for the largest event and its name when the log has room for
// that. The slots never take more than log-max-size (POSIX: the most bytes
// the log allocates for events): in a log too small for two such slots, an
// event larger than a slot is truncated to fit (append()). A log larger than
// kMaxLoopSlots slots of kMaxLoopSlot gets larger slots, and one larger than
// kMaxLoopSlots of the largest slots uses only that much.
void plan_loop_slots(size_t log_size, size_t max_data_size, uint32_t &slot_size,
                     uint64_t &slot_count)
{
    size_t largest_event = kBlockHeaderSize + padded8(kNameRecordHeader + kMaxNameLength) +
                           padded8(kEventRecordHeader + std::min(max_data_size, kMaxEventData));
    size_t slot = std::clamp(log_size / 4 / kPageSize * kPageSize,
                             round_up(largest_event, kPageSize), kMaxLoopSlot);
    size_t slot_for_slot_limit =
        round_up(log_size / kMaxLoopSlots + (log_size % kMaxLoopSlots != 0), kPageSize);
    slot = std::max(slot, std::min<size_t>(slot_for_slot_limit, kMaxLoopSlotSize));
    if (2 * slot > log_size)
        slot = log_size / 2 / 8 * 8;
    slot_size = uint32_t(slot);
    slot_count = std::clamp<uint64_t>(log_size / slot, 2, kMaxLoopSlots);
}

} // namespace

int LogWriter::create(int fd, const Attributes &attributes, pid_t target, const TraceOrigin &origin,
                      const std::vector<NamedType> &known_types, size_t run_bytes_wanted,
                      std::function<void()> progress, std::unique_ptr<LogWriter> &out)
{
    auto writer = std::make_unique<LogWriter>();
    if (int err = writer->prepare(fd, attributes))
        return err;
    writer->runs_taken_ = run_bytes_wanted &&
                          attributes.log_full_policy != POSIX_TRACE_UNTIL_FULL &&
                          writer->run_capacity() >= run_bytes_wanted;
    std::vector<uint8_t> header = writer->header_bytes(attributes, target, origin, known_types);
    if (int err = writer->end_file_at_base())
        return err;
    if (int err = writer->reserve_space())
        return err;
    if (int err = writer->write_at(0, header.data(), header.size()))
        return err;
    writer->end_offset_ = writer->layout_.data_offset;
    if (!writer->layout_.seekable && header.size() < writer->layout_.data_offset) {
        std::vector<uint8_t> gap(writer->layout_.data_offset - header.size(), 0);
        if (int err = writer->write_at(header.size(), gap.data(), gap.size()))
            return err;
    }
    writer->progress_ = std::move(progress);
    writer->start_block();
    LogWriter *self = writer.get();
    writer->writer_ = LibraryThreads::start(
        "posixtrace-log", [self](std::stop_token stop) { self->write_loop(stop); });
    out = std::move(writer);
    return 0;
}

// Checks the descriptor against the policy and takes our own duplicate of it.
int LogWriter::prepare(int fd, const Attributes &attributes)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
        return EBADF;
    struct stat file;
    if (fstat(fd, &file) != 0)
        return EBADF;
    attributes_ = attributes;
    bool regular = S_ISREG(file.st_mode);
    bool loop = attributes.log_full_policy == POSIX_TRACE_LOOP;
    if (loop && (!regular || (flags & O_APPEND)))
        return EINVAL; // LOOP rewrites its oldest slot in place
    layout_.regular = regular;
    layout_.seekable = regular && !(flags & O_APPEND);
    if (layout_.seekable) {
        layout_.base = lseek(fd, 0, SEEK_CUR);
        if (layout_.base < 0)
            return EBADF;
    } else if (regular) {
        layout_.base = file.st_size; // O_APPEND: the header goes at the end
    }
    fd_.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!fd_)
        return errno == EMFILE ? ENOMEM : EBADF;

    if (loop)
        plan_loop_slots(attributes.log_size, attributes.max_data_size, layout_.slot_size,
                        layout_.slot_count);
    return 0;
}

// What the file held from where the log begins goes: an older log left
// there would be read as part of this one (its LOOP slots as this log's
// slots never written, which must read as zeros; its end, where a reader
// looks for the log's footer).
int LogWriter::end_file_at_base()
{
    if (!layout_.seekable)
        return 0;
    return ftruncate(fd_.get(), layout_.base) == 0 ? 0 : errno;
}

// The space a policy bounds is taken now, so a full device is an ENOSPC
// from posix_trace_create_withlog rather than a log cut short later. LOOP
// owns its whole ring; UNTIL_FULL reserves log-max-size past the end of the
// file, handed back at close.
int LogWriter::reserve_space()
{
    if (!layout_.seekable || attributes_.log_full_policy == POSIX_TRACE_APPEND)
        return 0;
    off_t length;
    int err;
    if (layout_.slot_size) {
        length = off_t(layout_.data_offset + layout_.slot_count * layout_.slot_size);
        err = posix_fallocate(fd_.get(), layout_.base, length);
        layout_.slots_zero = err == 0;
    } else {
        length = off_t(layout_.data_offset + attributes_.log_size);
        err = fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, layout_.base, length) == 0 ? 0 : errno;
    }
    if (err == EOPNOTSUPP || err == ENOSYS)
        return 0; // the file system cannot reserve: the log still works
    return err;
}

std::vector<uint8_t> LogWriter::header_bytes(const Attributes &attributes, pid_t target,
                                             const TraceOrigin &origin,
                                             const std::vector<NamedType> &types)
{
    ByteSink sink;
    sink.put_bytes(kMagic, sizeof kMagic);
    sink.put<uint16_t>(runs_taken_ ? kMajorVersionOverlapping : kMajorVersionInOrder);
    sink.put<uint16_t>(kMinorVersion);
    sink.put<uint32_t>(0); // header_size, patched below
    sink.put<uint64_t>(0); // data_offset, patched below
    sink.put<uint32_t>(uint32_t(attributes.log_full_policy));
    sink.put<uint32_t>(layout_.slot_size);
    sink.put<uint64_t>(layout_.slot_count);
    sink.put<uint32_t>(uint32_t(attributes.inheritance));
    sink.put<uint32_t>(uint32_t(attributes.stream_full_policy));
    sink.put<uint64_t>(attributes.stream_size);
    sink.put<uint64_t>(attributes.max_data_size);
    sink.put<uint64_t>(attributes.log_size);
    sink.put<uint64_t>(uint64_t(int64_t(attributes.create_time.tv_sec)));
    sink.put<uint32_t>(uint32_t(attributes.create_time.tv_nsec));
    sink.put<uint32_t>(uint32_t(clock_resolution().tv_nsec));
    sink.put<uint64_t>(uint64_t(int64_t(target)));
    sink.put_fixed_string(attributes.name, TRACE_NAME_MAX);
    sink.put_fixed_string(kGenerationVersion, TRACE_NAME_MAX);
    put_name_table(sink, types);
    put_origin(sink, origin);
    size_t header_size = sink.size() + 4;
    // LOOP slots start on a page, so rewriting one touches only its own pages.
    uint64_t data_offset = attributes.log_full_policy == POSIX_TRACE_LOOP
                               ? round_up(header_size, kPageSize)
                               : padded8(header_size);
    std::vector<uint8_t> &bytes = sink.bytes();
    store<uint32_t>(bytes.data() + 12, uint32_t(header_size));
    store<uint64_t>(bytes.data() + 16, data_offset);
    sink.put<uint32_t>(crc32_of(bytes.data(), bytes.size()));
    layout_.data_offset = data_offset;
    return std::move(sink.bytes());
}

LogWriter::~LogWriter()
{
    if (writer_.joinable()) {
        writer_.request_stop();
        changed_.notify_all();
        writer_.join();
    }
}

// ---- the stream's side -------------------------------------------------------

size_t LogWriter::payload_capacity() const
{
    return layout_.slot_size ? layout_.slot_size - kBlockHeaderSize : kSequentialBlockPayload;
}

void LogWriter::start_block()
{
    size_t capacity = payload_capacity() - (runs_taken_ ? kWatermarkRecordSize : 0);
    current_memory_ = take_spare();
    current_memory_.resize(BlockEncoder::memory_for(capacity)); // not zeroed: written before read
    current_ = BlockEncoder(current_memory_.data(), capacity);
}

BlockBytes LogWriter::take_spare()
{
    std::lock_guard lock(mutex_);
    if (spare_blocks_.empty())
        return {};
    BlockBytes bytes = std::move(spare_blocks_.back());
    spare_blocks_.pop_back();
    return bytes;
}

// UNTIL_FULL: the events that do not fit in log-max-size are discarded, and
// the log ends with a stop event: room for it (in a block of its own, at
// worst) is kept until then.
bool LogWriter::reserve(size_t bytes, bool closing_stop)
{
    if (attributes_.log_full_policy != POSIX_TRACE_UNTIL_FULL)
        return true;
    size_t block_header = current_.empty() ? kBlockHeaderSize : 0;
    size_t kept = closing_stop ? 0 : kBlockHeaderSize + kStopRecordBytes;
    std::lock_guard lock(mutex_);
    // Once full, a smaller event that would still fit is discarded too: the
    // log keeps the oldest events, without holes.
    if ((full_ && !closing_stop) ||
        reserved_bytes_ + block_header + bytes + kept > attributes_.log_size) {
        full_ = true;
        return false;
    }
    reserved_bytes_ += block_header + bytes;
    return true;
}

LogWriter::Appended LogWriter::append(const pt_record &record, const void *data,
                                      const NameLookup &name_of)
{
    uint32_t id = record.event_id;
    if (id >= POSIX_TRACE_EVENT_ID_LIMIT)
        return Appended::discarded;
    // User and USDT ids are the stream's own: each block names those it uses.
    auto name_if_new = [&]() -> std::optional<std::string> {
        if (id < POSIX_TRACE_USER_EVENT_FIRST || current_.named(id))
            return std::nullopt;
        return name_of(id);
    };
    std::optional<std::string> name = name_if_new();
    std::optional<pt_namespace_ids> ids = namespace_ids_of(record, data);
    size_t event_bytes = BlockEncoder::event_record_bytes(record.data_len, ids.has_value());
    if (name_record_bytes(name) + event_bytes > current_.room()) {
        submit(record.timestamp_ns); // every event before this one is in
        name = name_if_new();
    }
    // A LOOP log too small for its largest events keeps what fits of one.
    pt_record fitted;
    const pt_record *stored = &record;
    if (size_t room = current_.capacity() - name_record_bytes(name); event_bytes > room) {
        fitted = record;
        size_t ids_bytes = ids ? kNamespaceIdsRecordSize : 0;
        fitted.data_len = uint32_t((room - kEventRecordHeader - ids_bytes) / 8 * 8);
        fitted.flags |= PT_RECORD_TRUNCATED;
        event_bytes = BlockEncoder::event_record_bytes(fitted.data_len, ids.has_value());
        stored = &fitted;
    }
    if (!reserve(name_record_bytes(name) + event_bytes, false)) {
        bool first = discarded_++ == 0;
        return first ? Appended::filled_it : Appended::discarded;
    }
    if (name)
        current_.add_name(id, *name);
    current_.add_event(*stored, data, 0, ids ? &*ids : nullptr);
    return Appended::written;
}

bool LogWriter::append_closing_stop(const pt_record &stop, const void *data)
{
    if (kStopRecordBytes > current_.room())
        submit(stop.timestamp_ns);
    if (!reserve(kStopRecordBytes, true))
        return false;
    current_.add_event(stop, data);
    return true;
}

uint64_t LogWriter::submit(uint64_t complete_below_ns)
{
    if (current_.empty()) {
        std::lock_guard lock(mutex_);
        return next_ticket_ - 1; // nothing new: done once what is queued is
    }
    uint64_t ticket = queue_block(current_, std::move(current_memory_), complete_below_ns);
    start_block();
    return ticket;
}

size_t LogWriter::run_capacity() const
{
    return payload_capacity() - kWatermarkRecordSize;
}

// The block being filled goes later, whole: a block a run cut short would
// take a LOOP slot of its own. Its events are not complete until then.
uint64_t LogWriter::submit_run(BlockEncoder &run, uint64_t complete_below_ns)
{
    if (run.empty()) {
        std::lock_guard lock(mutex_);
        return next_ticket_ - 1;
    }
    if (!current_.empty())
        complete_below_ns = std::min(complete_below_ns, current_.first_ns());
    return queue_block(run, {}, complete_below_ns);
}

// Numbers the block, and queues it once the queue has room.
uint64_t LogWriter::queue_block(BlockEncoder &block, BlockBytes &&memory,
                                uint64_t complete_below_ns)
{
    if (runs_taken_)
        block.add_watermark(complete_below_ns);
    uint32_t events = block.events();
    std::span<uint8_t> bytes = block.finish(next_sequence_);
    if (!memory.empty())
        memory.resize(bytes.size()); // the block is at its start
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return queued_bytes_ < kMaxQueuedBytes || first_error_; });
    uint64_t ticket = next_ticket_++;
    queued_bytes_ += bytes.size();
    queue_.push_back({std::move(memory), bytes, next_sequence_++, ticket, events});
    lock.unlock();
    changed_.notify_all();
    return ticket;
}

bool LogWriter::done(uint64_t ticket) const
{
    std::lock_guard lock(mutex_);
    return written_ticket_ >= ticket;
}

int LogWriter::first_error() const
{
    std::lock_guard lock(mutex_);
    return first_error_;
}

int LogWriter::take_flush_error()
{
    std::lock_guard lock(mutex_);
    return std::exchange(flush_error_, 0);
}

uint64_t LogWriter::take_unwritten_events()
{
    std::lock_guard lock(mutex_);
    return std::exchange(unwritten_events_, 0);
}

void LogWriter::forget_unwritten_events()
{
    std::lock_guard lock(mutex_);
    unwritten_events_ = 0;
    counted_from_ticket_ = next_ticket_;
}

void LogWriter::count_unwritten_locked(const PendingBlock &block)
{
    if (block.ticket >= counted_from_ticket_)
        unwritten_events_ += block.events;
}

bool LogWriter::full() const
{
    std::lock_guard lock(mutex_);
    return full_;
}

bool LogWriter::take_overrun()
{
    std::lock_guard lock(mutex_);
    return std::exchange(overrun_, false);
}

uint64_t LogWriter::events_written() const
{
    std::lock_guard lock(mutex_);
    return events_written_;
}

// ---- clearing ----------------------------------------------------------------------

int LogWriter::reset()
{
    if (attributes_.log_full_policy == POSIX_TRACE_APPEND)
        return EOPNOTSUPP;
    if (!layout_.regular)
        return ESPIPE; // what went down a pipe cannot be taken back
    if (int err = forget_written_blocks())
        return err;
    start_block();
    next_sequence_ = 0;
    reserved_bytes_ = 0;
    discarded_ = 0;
    std::lock_guard lock(mutex_);
    end_offset_ = layout_.data_offset;
    events_written_ = 0;
    unwritten_events_ = 0; // their events were cleared
    full_ = overrun_ = overwritten_ = false;
    first_error_ = 0; // the blocks before a failed write are gone with it
    return 0;
}

// The blocks not yet written are dropped (their events were cleared), the one
// being written is waited for, then the file loses every block: an UNTIL_FULL
// log is cut back to its header, the slots of a LOOP log are emptied. The
// space is reserved again, as create() did.
int LogWriter::forget_written_blocks()
{
    {
        std::unique_lock lock(mutex_);
        for (const PendingBlock &block : queue_)
            queued_bytes_ -= block.block.size();
        queue_.clear();
        changed_.wait(lock, [&] { return queued_bytes_ == 0; });
        written_ticket_ = next_ticket_ - 1;
    }
    changed_.notify_all(); // a submit() waiting for room
    off_t blocks_at = layout_.base + off_t(layout_.data_offset);
    if (layout_.slot_size) {
        off_t slots = off_t(layout_.slot_count * layout_.slot_size);
        if (fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, blocks_at, slots) !=
            0) {
            std::vector<uint8_t> zeros(layout_.slot_size, 0);
            for (uint64_t slot = 0; slot < layout_.slot_count; ++slot)
                if (int err = write_at(layout_.data_offset + slot * layout_.slot_size, zeros.data(),
                                       zeros.size()))
                    return err;
        }
    } else if (ftruncate(fd_.get(), blocks_at) != 0) {
        return errno;
    }
    return reserve_space();
}

// ---- closing -----------------------------------------------------------------------

int LogWriter::close(const FinalState &state)
{
    submit();
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return queue_.empty() && written_ticket_ + 1 >= next_ticket_; });
    }
    if (writer_.joinable()) {
        writer_.request_stop();
        changed_.notify_all();
        writer_.join();
    }
    if (first_error_)
        return first_error_;

    ByteSink trailer;
    trailer.put<uint32_t>(kTrailerMagic);
    trailer.put<uint32_t>(0); // CRC, patched below
    trailer.put<uint32_t>(0); // size, patched below
    trailer.put<uint32_t>(0);
    trailer.put<uint64_t>(next_sequence_);
    trailer.put<uint64_t>(events_written_);
    trailer.put<uint64_t>(discarded_);
    trailer.put<uint64_t>(state.recorded);
    trailer.put<uint64_t>(state.lost_in_kernel);
    trailer.put<uint64_t>(state.lost_in_stream);
    // The log's own status is known only now that every block is written.
    posix_trace_status_info s = state.status;
    s.posix_log_full_status = full_ ? POSIX_TRACE_FULL : POSIX_TRACE_NOT_FULL;
    s.posix_log_overrun_status = overwritten_ ? POSIX_TRACE_OVERRUN : POSIX_TRACE_NO_OVERRUN;
    for (int value :
         {s.posix_stream_status, s.posix_stream_full_status, s.posix_stream_overrun_status,
          s.posix_stream_flush_status, s.posix_stream_flush_error, s.posix_log_overrun_status,
          s.posix_log_full_status})
        trailer.put<uint32_t>(uint32_t(value));
    trailer.put<uint32_t>(0);
    put_name_table(trailer, state.types);
    trailer.pad_to(8);
    std::vector<uint8_t> &bytes = trailer.bytes();
    store<uint32_t>(bytes.data() + 8, uint32_t(bytes.size()));
    store<uint32_t>(bytes.data() + 4, crc32_of(bytes.data() + 8, bytes.size() - 8));

    uint64_t trailer_offset = layout_.slot_size
                                  ? layout_.data_offset + layout_.slot_count * layout_.slot_size
                                  : end_offset_;
    ByteSink footer;
    footer.put_bytes(kFooterMagic, sizeof kFooterMagic);
    footer.put<uint64_t>(trailer_offset);
    footer.put<uint32_t>(crc32_of(footer.bytes().data(), footer.size()));
    footer.put<uint32_t>(0);
    bytes.insert(bytes.end(), footer.bytes().begin(), footer.bytes().end());
    if (int err = write_at(trailer_offset, bytes.data(), bytes.size())) {
        note_error(err);
        return err;
    }
    release_reserved_space(trailer_offset + bytes.size());
    return 0;
}

void LogWriter::release_reserved_space(uint64_t log_end)
{
    uint64_t reserved_end = layout_.data_offset + attributes_.log_size;
    if (!layout_.seekable || attributes_.log_full_policy != POSIX_TRACE_UNTIL_FULL ||
        log_end >= reserved_end)
        return;
    fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, layout_.base + off_t(log_end),
              off_t(reserved_end - log_end));
}

} // namespace posixtrace::log
