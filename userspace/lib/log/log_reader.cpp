#include "log/log_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <posix_trace/events.h>

#include <algorithm>
#include <cerrno>

#include "events/event_names.hpp"

namespace posixtrace::log {
namespace {

bool valid_name_length(uint32_t length)
{
    return length >= 1 && length <= kMaxNameLength;
}

// While a LOOP log's slots are indexed, a read of one slot's header is not
// followed by the kernel's readahead, which would bring in up to the
// device's readahead size (often megabytes) of every slot, most of them
// still empty and read as zeros in a log not yet round. The descriptor is
// a duplicate of the caller's: its advice goes back to normal afterwards.
class SlotHeadersOnly {
public:
    explicit SlotHeadersOnly(int fd) : fd_(fd) { posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM); }
    ~SlotHeadersOnly() { posix_fadvise(fd_, 0, 0, POSIX_FADV_NORMAL); }
    SlotHeadersOnly(const SlotHeadersOnly &) = delete;
    SlotHeadersOnly &operator=(const SlotHeadersOnly &) = delete;

private:
    int fd_;
};

} // namespace

int LogReader::open(int fd, std::unique_ptr<LogReader> &out)
{
    auto reader = std::make_unique<LogReader>();
    int flags = fcntl(fd, F_GETFL);
    struct stat file;
    if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY || fstat(fd, &file) != 0 ||
        !S_ISREG(file.st_mode))
        return EINVAL;
    reader->base_ = lseek(fd, 0, SEEK_CUR);
    if (reader->base_ < 0 || reader->base_ > file.st_size)
        return EINVAL;
    reader->file_size_ = uint64_t(file.st_size - reader->base_);
    reader->fd_.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!reader->fd_)
        return EINVAL;
    if (int err = reader->read_header())
        return err;
    reader->read_trailer();
    reader->rewind();
    out = std::move(reader);
    return 0;
}

bool LogReader::read_exact(uint64_t offset, void *into, size_t length) const
{
    if (offset > file_size_ || length > file_size_ - offset)
        return false;
    auto *bytes = static_cast<uint8_t *>(into);
    while (length) {
        ssize_t n = pread(fd_.get(), bytes, length, base_ + off_t(offset));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        bytes += n;
        offset += uint64_t(n);
        length -= size_t(n);
    }
    return true;
}

int LogReader::parse_name_table(const uint8_t *at, size_t length,
                                std::map<trace_event_id_t, std::string> &into, size_t *used)
{
    if (length < 4)
        return EINVAL;
    uint32_t count = load<uint32_t>(at);
    size_t offset = 4;
    for (uint32_t i = 0; i < count; ++i) {
        if (length - offset < 8)
            return EINVAL;
        uint32_t id = load<uint32_t>(at + offset);
        uint32_t name_length = load<uint32_t>(at + offset + 4);
        if (id >= POSIX_TRACE_EVENT_ID_LIMIT || !valid_name_length(name_length) ||
            length - offset - 8 < padded4(name_length))
            return EINVAL;
        into[id] = std::string(reinterpret_cast<const char *>(at + offset + 8), name_length);
        offset += 8 + padded4(name_length);
    }
    if (used)
        *used = offset;
    return 0;
}

int LogReader::read_header()
{
    uint8_t fixed[kHeaderFixedSize];
    if (!read_exact(0, fixed, sizeof fixed) || std::memcmp(fixed, kMagic, sizeof kMagic) != 0)
        return EINVAL;
    uint16_t major = load<uint16_t>(fixed + 8);
    if (major != kMajorVersionInOrder && major != kMajorVersionOverlapping)
        return EINVAL;
    overlapping_ = major == kMajorVersionOverlapping;
    uint32_t header_size = load<uint32_t>(fixed + 12);
    data_offset_ = load<uint64_t>(fixed + 16);
    if (header_size < kHeaderFixedSize + 8 || header_size > (16u << 20) ||
        data_offset_ < header_size || data_offset_ % 8 || data_offset_ > (uint64_t(1) << 48))
        return EINVAL;
    std::vector<uint8_t> header(header_size);
    if (!read_exact(0, header.data(), header.size()) ||
        crc32_of(header.data(), header_size - 4) != load<uint32_t>(header.data() + header_size - 4))
        return EINVAL;

    const uint8_t *h = header.data();
    Attributes a = Attributes::defaults();
    a.log_full_policy = int(load<uint32_t>(h + 24));
    slot_size_ = load<uint32_t>(h + 28);
    slot_count_ = load<uint64_t>(h + 32);
    a.inheritance = int(load<uint32_t>(h + 40));
    a.stream_full_policy = int(load<uint32_t>(h + 44));
    a.stream_size = load<uint64_t>(h + 48);
    a.max_data_size = load<uint64_t>(h + 56);
    a.log_size = load<uint64_t>(h + 64);
    a.create_time.tv_sec = time_t(int64_t(load<uint64_t>(h + 72)));
    a.create_time.tv_nsec = long(load<uint32_t>(h + 80) % 1'000'000'000u);
    traced_pid_ = pid_t(int64_t(load<uint64_t>(h + 88)));
    std::memcpy(a.name, h + 96, TRACE_NAME_MAX);
    a.name[TRACE_NAME_MAX - 1] = 0;
    bool known_policies =
        (a.log_full_policy == POSIX_TRACE_LOOP || a.log_full_policy == POSIX_TRACE_UNTIL_FULL ||
         a.log_full_policy == POSIX_TRACE_APPEND) &&
        (a.stream_full_policy == POSIX_TRACE_LOOP ||
         a.stream_full_policy == POSIX_TRACE_UNTIL_FULL ||
         a.stream_full_policy == POSIX_TRACE_FLUSH) &&
        (a.inheritance == POSIX_TRACE_CLOSE_FOR_CHILD || a.inheritance == POSIX_TRACE_INHERITED);
    if (!known_policies) // a header no writer makes: its attributes would be garbage
        return EINVAL;
    bool loop = a.log_full_policy == POSIX_TRACE_LOOP;
    // A LOOP log's slots may run past the end of the file: a copy cut short
    // keeps the slots before the cut, and they are read.
    if (loop != (slot_size_ != 0) || (loop && !loop_slots_as_written(a.log_size)))
        return EINVAL;
    attributes_ = a;
    size_t after_fixed = header_size - 4 - kHeaderFixedSize, table_bytes = 0;
    if (int err = parse_name_table(h + kHeaderFixedSize, after_fixed, names_, &table_bytes))
        return err;
    if (load<uint16_t>(fixed + 10) < kMinorVersionWithOrigin)
        return 0;
    if (after_fixed - table_bytes < kOriginSize) // its writer put one: the header is cut
        return EINVAL;
    origin_ = parse_origin(h + kHeaderFixedSize + table_bytes);
    return 0;
}

// Slots as a writer lays them out (plan_loop_slots in log_writer.cpp), and
// no others: every slot in the file is read on opening and on every rewind,
// so their number must stay small whatever the header claims.
bool LogReader::loop_slots_as_written(uint64_t log_size) const
{
    return slot_size_ % 8 == 0 && slot_size_ >= kMinLoopSlotSize &&
           slot_size_ <= kMaxLoopSlotSize && slot_count_ >= 2 && slot_count_ <= kMaxLoopSlots &&
           slot_count_ * slot_size_ <= log_size;
}

// A log whose footer and trailer check out was shut down cleanly: its
// trailer has the final status and every event type. Without them the log
// was cut short, and the stream it came from was, as far as anyone can
// tell, running and then suspended.
void LogReader::read_trailer()
{
    status_ = {};
    status_.posix_stream_status = POSIX_TRACE_SUSPENDED;
    status_.posix_stream_full_status = POSIX_TRACE_NOT_FULL;
    status_.posix_stream_overrun_status = POSIX_TRACE_NO_OVERRUN;
    status_.posix_stream_flush_status = POSIX_TRACE_NOT_FLUSHING;
    status_.posix_log_overrun_status = POSIX_TRACE_NO_OVERRUN;
    status_.posix_log_full_status = POSIX_TRACE_NOT_FULL;

    uint8_t footer[kFooterSize];
    if (file_size_ < data_offset_ + kFooterSize ||
        !read_exact(file_size_ - kFooterSize, footer, sizeof footer) ||
        std::memcmp(footer, kFooterMagic, sizeof kFooterMagic) != 0 ||
        crc32_of(footer, 16) != load<uint32_t>(footer + 16))
        return;
    uint64_t offset = load<uint64_t>(footer + 8);
    uint64_t limit = file_size_ - kFooterSize;
    uint8_t fixed[kTrailerFixedSize];
    if (offset < data_offset_ || offset > limit || limit - offset < kTrailerFixedSize ||
        !read_exact(offset, fixed, sizeof fixed) || load<uint32_t>(fixed) != kTrailerMagic)
        return;
    uint32_t size = load<uint32_t>(fixed + 8);
    if (size < kTrailerFixedSize + 4 || size > limit - offset || size > (16u << 20))
        return;
    std::vector<uint8_t> trailer(size);
    if (!read_exact(offset, trailer.data(), size) ||
        crc32_of(trailer.data() + 8, size - 8) != load<uint32_t>(trailer.data() + 4))
        return;
    std::map<trace_event_id_t, std::string> final_names;
    if (parse_name_table(trailer.data() + kTrailerFixedSize, size - kTrailerFixedSize,
                         final_names) != 0)
        return;
    final_names.merge(names_); // the trailer's name wins
    names_ = std::move(final_names);
    const uint8_t *t = trailer.data() + 64;
    int *fields[] = {&status_.posix_stream_status,         &status_.posix_stream_full_status,
                     &status_.posix_stream_overrun_status, &status_.posix_stream_flush_status,
                     &status_.posix_stream_flush_error,    &status_.posix_log_overrun_status,
                     &status_.posix_log_full_status};
    for (size_t i = 0; i < std::size(fields); ++i)
        *fields[i] = int(load<uint32_t>(t + 4 * i));
    counters_ = posix_trace_counters{load<uint64_t>(trailer.data() + 40),
                                     load<uint64_t>(trailer.data() + 48),
                                     load<uint64_t>(trailer.data() + 56)};
    trailer_offset_ = offset;
}

Attributes LogReader::attributes() const
{
    return attributes_;
}

posix_trace_status_info LogReader::status() const
{
    return status_;
}

// ---- blocks --------------------------------------------------------------------

// LOOP: the newest block is the one with the highest sequence in its own
// slot; the slots before it, in sequence order, hold the older ones. In a log
// cut short, the slots past the cut are gone: reading starts after the newest
// of them, so what is read runs without a gap up to the newest block.
void LogReader::index_loop_slots()
{
    any_block_ = false;
    newest_sequence_ = 0;
    SlotHeadersOnly headers_only(fd_.get());
    uint64_t slots_in_file = // none in a log cut before its first block
        file_size_ > data_offset_ ? (file_size_ - data_offset_ + slot_size_ - 1) / slot_size_ : 0;
    for (uint64_t slot = 0; slot < std::min(slot_count_, slots_in_file); ++slot) {
        if (auto sequence = sequence_in_slot(slot);
            sequence && (!any_block_ || *sequence > newest_sequence_)) {
            newest_sequence_ = *sequence;
            any_block_ = true;
        }
    }
    next_sequence_ = newest_sequence_ >= slot_count_ ? newest_sequence_ - slot_count_ + 1 : 0;
    if (!any_block_)
        return;
    for (uint64_t sequence = newest_sequence_; sequence-- > next_sequence_;) {
        if (slot_cut_off(sequence)) {
            next_sequence_ = sequence + 1;
            break;
        }
    }
    if (!trailer_offset_ && next_sequence_ > 0)
        status_.posix_log_overrun_status = POSIX_TRACE_OVERRUN; // older events are gone
}

// The sequence of the block a slot holds, if it has a block header of its own.
std::optional<uint64_t> LogReader::sequence_in_slot(uint64_t slot) const
{
    uint8_t header[kBlockHeaderSize];
    if (!read_exact(data_offset_ + slot * slot_size_, header, sizeof header) ||
        load<uint32_t>(header) != kBlockMagic)
        return std::nullopt;
    uint64_t sequence = load<uint64_t>(header + 8);
    if (sequence % slot_count_ != slot)
        return std::nullopt;
    return sequence;
}

// Whether the slot of `sequence` lies past the end of the file without that
// block whole before it: a cut, not damage.
bool LogReader::slot_cut_off(uint64_t sequence) const
{
    uint64_t offset = data_offset_ + (sequence % slot_count_) * slot_size_;
    if (offset + slot_size_ <= file_size_)
        return false;
    uint8_t header[kBlockHeaderSize];
    if (!read_exact(offset, header, sizeof header) || load<uint32_t>(header) != kBlockMagic ||
        load<uint64_t>(header + 8) != sequence)
        return true;
    uint64_t payload = load<uint32_t>(header + 16);
    return file_size_ - offset - kBlockHeaderSize < payload;
}

void LogReader::rewind()
{
    std::lock_guard lock(mutex_);
    error_ = 0;
    ended_ = false;
    met_trailer_ = false;
    block_.clear();
    held_.clear();
    held_bytes_ = 0;
    loaded_ = 0;
    complete_below_ns_ = overlapping_ ? 0 : UINT64_MAX;
    next_block_offset_ = data_offset_;
    next_sequence_ = 0;
    if (slot_size_)
        index_loop_slots();
}

bool LogReader::load_next_block()
{
    if (slot_size_) {
        if (!any_block_ || next_sequence_ > newest_sequence_)
            return false;
        uint64_t sequence = next_sequence_++;
        uint64_t offset = data_offset_ + (sequence % slot_count_) * slot_size_;
        // The newest slot of a log cut short may be the one the writer was
        // rewriting when it was killed.
        bool may_be_torn = !trailer_offset_ && sequence == newest_sequence_;
        return load_block_at(offset, sequence, may_be_torn);
    }
    uint64_t end = trailer_offset_.value_or(file_size_);
    if (next_block_offset_ == end)
        return false;
    uint8_t magic[4];
    if (!trailer_offset_ && read_exact(next_block_offset_, magic, 4) &&
        load<uint32_t>(magic) == kTrailerMagic) {
        met_trailer_ = true; // of a log whose footer is gone, or not written yet
        return false;
    }
    uint64_t offset = next_block_offset_;
    if (!load_block_at(offset, next_sequence_, !trailer_offset_))
        return false;
    next_block_offset_ = offset + last_block_bytes_;
    ++next_sequence_;
    return true;
}

// Reads and checks one block; false with error_ set when it is damaged, or
// false alone when it is the incomplete end of a log cut short.
bool LogReader::load_block_at(uint64_t offset, uint64_t expected_sequence, bool may_be_torn)
{
    uint64_t end = slot_size_ ? offset + slot_size_ : trailer_offset_.value_or(file_size_);
    uint8_t header[kBlockHeaderSize];
    if (end < offset || end - offset < kBlockHeaderSize ||
        !read_exact(offset, header, sizeof header)) {
        if (!may_be_torn)
            error_ = EINVAL;
        return false;
    }
    uint32_t payload = load<uint32_t>(header + 16);
    bool well_formed = load<uint32_t>(header) == kBlockMagic && payload % 8 == 0 &&
                       payload <= kMaxBlockPayload &&
                       load<uint64_t>(header + 8) == expected_sequence;
    if (well_formed && end - offset - kBlockHeaderSize < payload) {
        if (!may_be_torn) // a block longer than what is left of the file
            error_ = EINVAL;
        return false;
    }
    if (!well_formed) {
        if (!(may_be_torn && slot_size_))
            error_ = EINVAL;
        return false;
    }
    block_.resize(kBlockHeaderSize + payload);
    std::memcpy(block_.data(), header, sizeof header);
    std::vector<size_t> events;
    uint64_t complete_below_ns = 0;
    if (!read_exact(offset + kBlockHeaderSize, block_.data() + kBlockHeaderSize, payload) ||
        crc32_of(block_.data() + 8, block_.size() - 8) != load<uint32_t>(header + 4) ||
        !check_records(events, complete_below_ns)) {
        block_.clear();
        // Only a rewritten LOOP slot can be torn with its length intact.
        if (!(may_be_torn && slot_size_))
            error_ = EINVAL;
        return false;
    }
    // Blocks whose events are not complete yet are held: no more of them
    // than a writer ever leaves open (in a log in time order, one).
    if (!events.empty() && held_bytes_ + block_.size() > kMaxOverlapBytes) {
        block_.clear();
        error_ = EINVAL;
        return false;
    }
    last_block_bytes_ = block_.size();
    if (!events.empty())
        hold(std::move(events));
    complete_below_ns_ = complete_below_ns;
    return true;
}

// Every record of the block is checked before any event of it is returned.
// In a log whose blocks may overlap, none of its events may come before
// what earlier blocks said was complete, and its watermarks may only move
// forward; its events are put in time order (a block may hold several
// runs).
bool LogReader::check_records(std::vector<size_t> &events, uint64_t &complete_below_ns)
{
    std::vector<std::pair<trace_event_id_t, std::string>> names;
    uint32_t count = load<uint32_t>(block_.data() + 20);
    uint32_t seen = 0;
    uint64_t latest_ns = 0;
    bool in_order = true;
    uint16_t previous_type = 0;
    complete_below_ns = complete_below_ns_;
    for (size_t at = kBlockHeaderSize; at < block_.size(); ++seen) {
        const uint8_t *record = block_.data() + at;
        size_t left = block_.size() - at;
        if (left < 16)
            return false;
        uint32_t size = load<uint32_t>(record);
        uint16_t type = load<uint16_t>(record + 4);
        if (size < 16 || size % 8 || size > left)
            return false;
        // an event's namespace ids follow it, once
        if (type == kRecordNamespaceIds &&
            (previous_type != kRecordEvent || size != kNamespaceIdsRecordSize))
            return false;
        previous_type = type;
        if (type == kRecordEvent) {
            uint32_t id = load<uint32_t>(record + 8);
            uint32_t data_len = load<uint32_t>(record + 12);
            if (size < kEventRecordHeader || id >= POSIX_TRACE_EVENT_ID_LIMIT ||
                data_len > kMaxEventData || padded8(kEventRecordHeader + data_len) != size)
                return false;
            uint64_t stamp = load<uint64_t>(record + 16);
            if (overlapping_ && stamp < complete_below_ns_)
                return false;
            in_order = in_order && stamp >= latest_ns;
            latest_ns = stamp;
            events.push_back(at);
        } else if (type == kRecordName) {
            uint32_t id = load<uint32_t>(record + 8);
            uint32_t length = load<uint32_t>(record + 12);
            if (id >= POSIX_TRACE_EVENT_ID_LIMIT || !valid_name_length(length) ||
                padded8(kNameRecordHeader + length) != size)
                return false;
            names.emplace_back(id,
                               std::string(reinterpret_cast<const char *>(record + 16), length));
        } else if (type == kRecordWatermark && overlapping_) {
            uint64_t watermark = load<uint64_t>(record + 8);
            if (size != kWatermarkRecordSize || watermark < complete_below_ns)
                return false;
            complete_below_ns = watermark;
        }
        at += size;
    }
    if (seen != count)
        return false;
    for (auto &[id, name] : names)
        names_[id] = std::move(name);
    if (overlapping_ && !in_order)
        std::stable_sort(events.begin(), events.end(), [&](size_t a, size_t b) {
            return load<uint64_t>(block_.data() + a + 16) < load<uint64_t>(block_.data() + b + 16);
        });
    return true;
}

// ---- events --------------------------------------------------------------------------

void LogReader::copy_out(const uint8_t *record, const uint8_t *block_end,
                         const EventDestination &to) const
{
    posix_trace_event_info &info = *to.info;
    info = {};
    info.posix_event_id = load<uint32_t>(record + 8);
    uint64_t timestamp = load<uint64_t>(record + 16);
    info.posix_timestamp.tv_sec = time_t(timestamp / 1'000'000'000u);
    info.posix_timestamp.tv_nsec = long(timestamp % 1'000'000'000u);
    info.posix_pid = pid_t(load<uint32_t>(record + 24));
    info.posix_tid = pid_t(load<uint32_t>(record + 28));
    info.posix_thread_id = pthread_t(load<uint64_t>(record + 32));
    info.posix_prog_address = reinterpret_cast<void *>(uintptr_t(load<uint64_t>(record + 40)));
    info.posix_truncation_status = load<uint16_t>(record + 6) & kEventTruncated
                                       ? POSIX_TRACE_TRUNCATED_RECORD
                                       : POSIX_TRACE_NOT_TRUNCATED;
    size_t length = load<uint32_t>(record + 12);
    if (to.capacity < length) {
        length = to.capacity;
        info.posix_truncation_status = POSIX_TRACE_TRUNCATED_READ;
    }
    if (length && to.data)
        std::memcpy(to.data, record + kEventRecordHeader, length);
    *to.data_len = to.data ? length : 0;
    if (to.namespace_ids) {
        // every record of the block was checked: the next one is whole
        const uint8_t *next = record + load<uint32_t>(record);
        bool known = block_end - next >= ptrdiff_t(kNamespaceIdsRecordSize) &&
                     load<uint16_t>(next + 4) == kRecordNamespaceIds;
        *to.namespace_ids = {
            known, known ? pt_namespace_ids{load<uint32_t>(next + 8), load<uint32_t>(next + 12)}
                         : pt_namespace_ids{}};
    }
}

// The held block whose next event is the oldest (the one loaded first on
// a tie) is at the front of the heap.
bool LogReader::HeldBlock::after(const HeldBlock &other) const
{
    return next_ns != other.next_ns ? next_ns > other.next_ns : order > other.order;
}

void LogReader::HeldBlock::stamp_next()
{
    next_ns = load<uint64_t>(bytes.data() + events[next] + 16);
}

void LogReader::hold(std::vector<size_t> &&events)
{
    held_bytes_ += block_.size();
    held_.push_back({std::move(block_), std::move(events), 0, loaded_++, 0});
    held_.back().stamp_next();
    block_ = {};
    std::push_heap(held_.begin(), held_.end(),
                   [](const HeldBlock &a, const HeldBlock &b) { return a.after(b); });
}

// Hands out the oldest held event and moves its block on. The block stays
// at the front while its next event is still the oldest, as it is for a
// whole run when runs do not overlap, so most events cost two comparisons.
void LogReader::hand_out_oldest(const EventDestination &to)
{
    HeldBlock &block = held_.front();
    copy_out(block.bytes.data() + block.events[block.next++],
             block.bytes.data() + block.bytes.size(), to);
    if (block.next < block.events.size()) {
        block.stamp_next();
        sift_down_oldest();
        return;
    }
    held_bytes_ -= block.bytes.size();
    std::pop_heap(held_.begin(), held_.end(),
                  [](const HeldBlock &a, const HeldBlock &b) { return a.after(b); });
    held_.pop_back();
}

// The front block's next event changed: it moves down the heap past the
// blocks whose next event is older.
void LogReader::sift_down_oldest()
{
    for (size_t at = 0;;) {
        size_t older = 2 * at + 1;
        if (older >= held_.size())
            return;
        if (older + 1 < held_.size() && held_[older].after(held_[older + 1]))
            ++older;
        if (!held_[at].after(held_[older]))
            return;
        std::swap(held_[at], held_[older]);
        at = older;
    }
}

// The oldest held event may go once nothing still to be read can come
// before it: before the watermark, or at the end of the log (a log cut
// short gives every event of its whole blocks). Not at damage: what the
// damaged block held may have come first, so reading stops there, and what
// was read is the log's beginning exactly.
bool LogReader::oldest_may_go() const
{
    return !held_.empty() && (ended_ || held_.front().next_ns < complete_below_ns_);
}

// A log still being written in time order (APPEND or UNTIL_FULL, no
// trailer yet) grows by whole blocks at its end: a reader at its end reads
// on once it has grown, as `tail -f` does, so a log can be followed while
// it is recorded. A block the writer has not finished is short, so it is
// read as the torn end of a log cut short, and read again once it is whole.
// A LOOP log rewrites its slots, and a log whose blocks overlap may hold
// older events in later ones: their readers keep the end they met.
bool LogReader::grew()
{
    if (trailer_offset_ || met_trailer_ || slot_size_ || overlapping_ || error_)
        return false;
    struct stat file;
    if (fstat(fd_.get(), &file) != 0 || file.st_size - base_ <= off_t(file_size_))
        return false;
    file_size_ = uint64_t(file.st_size - base_);
    return true;
}

int LogReader::next_event(const EventDestination &to, int *unavailable)
{
    std::lock_guard lock(mutex_);
    if (ended_ && held_.empty() && grew())
        ended_ = false;
    while (!oldest_may_go() && !error_ && !ended_) {
        if (!load_next_block())
            ended_ = true;
    }
    if (!error_ && oldest_may_go()) {
        hand_out_oldest(to);
        *unavailable = 0;
        return 0;
    }
    *unavailable = 1;
    return error_;
}

// ---- event types -----------------------------------------------------------------------

std::optional<std::string> LogReader::event_name(trace_event_id_t id) const
{
    std::lock_guard lock(mutex_);
    auto found = names_.find(id);
    if (found != names_.end())
        return found->second;
    if (auto builtin = builtin_event_name(id))
        return std::string(*builtin);
    return std::nullopt;
}

void LogReader::next_event_type(trace_event_id_t &id, int &unavailable)
{
    std::lock_guard lock(mutex_);
    auto next = type_cursor_ ? names_.upper_bound(*type_cursor_) : names_.begin();
    if (next == names_.end()) {
        unavailable = 1;
        return;
    }
    id = next->first;
    type_cursor_ = id;
    unavailable = 0;
}

void LogReader::rewind_event_types()
{
    std::lock_guard lock(mutex_);
    type_cursor_.reset();
}

} // namespace posixtrace::log
