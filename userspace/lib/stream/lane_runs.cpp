#include "stream/lane_runs.hpp"

#include <posix_trace/events.h>

#include <sys/mman.h>

#include <algorithm>

namespace posixtrace {
namespace {

size_t page_rounded(size_t bytes)
{
    return (bytes + 4095) & ~size_t(4095);
}

} // namespace

LaneRuns::LaneRuns(log::LogWriter &log, int64_t realtime_offset_ns)
    : log_(log), realtime_offset_ns_(realtime_offset_ns),
      run_capacity_(std::min(log.run_capacity(), kRunBytesAtMost)),
      slot_bytes_(page_rounded(log::BlockEncoder::memory_for(run_capacity_))),
      memory_(kMappedBytes, "posixtrace-runs")
{
    for (size_t slot = kMappedBytes / slot_bytes_; slot-- > 0;)
        free_slots_.push_back(slot); // slot 0 on top: the memory is touched in order
    if (memory_.valid())             // a fault a huge page, not one every 4 KiB
        madvise(memory_.data(), memory_.bytes(), MADV_HUGEPAGE);
}

// A record still being written, or any the stream would not take as it is,
// and the chunk stays with the merge: it judges each record there. The
// records are encoded as they are judged, in one pass; the caller takes
// them back if one is refused.
LaneRuns::Encoded LaneRuns::encode(const RingMerger::Chunk &chunk, const Judge &judge,
                                   uint64_t &latest_ns)
{
    log::BlockEncoder &block = open_->block;
    auto add = [&](const pt_record &record, uint64_t rest, bool new_type) {
        if (new_type && !name(record.event_id, rest, judge))
            return false;
        block.add_event(record, record.data, realtime_offset_ns_);
        latest_ns = record.timestamp_ns;
        return true;
    };
    switch (walk_chunk(chunk, judge.records, add)) {
    case ChunkWalk::Whole:
        return Encoded::All;
    case ChunkWalk::Stopped:
        return Encoded::NoRoom;
    case ChunkWalk::Refused:
        break;
    }
    return Encoded::Refused;
}

// A user event's name is in the run before its first event. A record takes
// no more bytes in the run than in its lane: `rest_bound`, the lane's bytes
// from this record on, is room enough for the rest of the chunk.
static_assert(PT_RING_HEADER_SIZE + PT_RECORD_HEADER_SIZE >= log::kEventRecordHeader);
bool LaneRuns::name(uint32_t id, size_t rest_bound, const Judge &judge)
{
    log::BlockEncoder &block = open_->block;
    if (id < POSIX_TRACE_USER_EVENT_FIRST || block.named(id))
        return true;
    std::optional<std::string> name = judge.name_of(id);
    if (!name)
        return true;
    if (log::BlockEncoder::name_record_bytes(*name) + rest_bound > block.room())
        return false;
    block.add_name(id, *name);
    named_by_take_.push_back(id);
    return true;
}

// A run that has room for a chunk's records but not for their names too
// is closed, and the chunk goes into the next; one that has no room for
// them when fresh leaves the chunk to the merge.
std::optional<LaneRuns::Taken> LaneRuns::take(const RingMerger::Chunk &chunk, const Judge &judge)
{
    size_t lane_bytes = size_t(chunk.to - chunk.from);
    if (!valid() || open_in_log_bytes_ + bytes_held_ + lane_bytes > kMostOpenBytes)
        return std::nullopt;
    for (;;) {
        if (!open_ || lane_bytes > open_->block.room()) {
            close_run();
            if (!open_run() || lane_bytes > open_->block.room())
                return std::nullopt; // every slot is held or being written
        }
        log::BlockEncoder &block = open_->block;
        log::BlockEncoder::Mark before = block.mark();
        named_by_take_.clear();
        uint64_t latest_ns = 0;
        Encoded encoded = encode(chunk, judge, latest_ns);
        if (encoded == Encoded::All) {
            size_t added = block.bytes() - before.size;
            bytes_held_ += added;
            events_held_ += block.events() - before.events;
            return Taken{added, block.events() - before.events, latest_ns};
        }
        block.roll_back(before, named_by_take_);
        if (encoded == Encoded::Refused || block.empty())
            return std::nullopt;
        close_run();
    }
}

std::optional<size_t> LaneRuns::free_slot()
{
    // Runs are written in the order they were handed over.
    while (free_slots_.empty() && !written_slots_.empty() &&
           log_.done(written_slots_.front().second)) {
        free_slots_.push_back(written_slots_.front().first);
        written_slots_.pop_front();
    }
    if (free_slots_.empty())
        return std::nullopt;
    size_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
}

bool LaneRuns::open_run()
{
    std::optional<size_t> slot = free_slot();
    if (!slot)
        return false;
    open_.emplace(
        Run{log::BlockEncoder(memory_.data() + *slot * slot_bytes_, run_capacity_), *slot});
    return true;
}

void LaneRuns::close_run()
{
    if (!open_)
        return;
    if (open_->block.empty())
        free_slots_.push_back(open_->slot);
    else
        held_.push_back(std::move(*open_));
    open_.reset();
}

uint64_t LaneRuns::next_first_ns() const
{
    return next_ < held_.size() ? held_[next_].block.first_ns() : UINT64_MAX;
}

// Each block handed over says what is complete after it: what comes later
// in this flush starts at the next event or the next run, what comes in a
// later flush at `later_ns`.
void LaneRuns::hand_over_before(uint64_t next_ns, uint64_t later_ns)
{
    if (!sorted_) { // taken lane after lane: each lane's in order, not all
        close_run();
        std::sort(held_.begin(), held_.end(), [](const Run &a, const Run &b) {
            return a.block.first_ns() < b.block.first_ns();
        });
        sorted_ = true;
    }
    while (next_ < held_.size() && held_[next_].block.first_ns() <= next_ns) {
        Run &run = held_[next_++];
        uint64_t complete_below_ns = std::min({next_ns, next_first_ns(), later_ns});
        open_in_log_.emplace_back(run.block.last_ns(), run.block.bytes());
        open_in_log_bytes_ += run.block.bytes();
        written_slots_.emplace_back(run.slot, log_.submit_run(run.block, complete_below_ns));
    }
    if (next_ns != UINT64_MAX)
        return;
    // The flush ends complete below `later_ns`: a reader lets go of the
    // runs all before it.
    std::erase_if(open_in_log_, [&](const auto &run) {
        if (run.first >= later_ns)
            return false;
        open_in_log_bytes_ -= run.second;
        return true;
    });
    held_.clear(); // the flush has appended everything
    next_ = 0;
    sorted_ = false;
    bytes_held_ = 0;
    events_held_ = 0;
}

uint64_t LaneRuns::give_back(const EventVisitor &event)
{
    close_run();
    for (size_t i = next_; i < held_.size(); ++i)
        held_[i].block.for_each_event(event);
    return drop_all();
}

uint64_t LaneRuns::drop_all()
{
    close_run();
    for (size_t i = next_; i < held_.size(); ++i)
        free_slots_.push_back(held_[i].slot);
    uint64_t events = events_held_;
    held_.clear();
    next_ = 0;
    sorted_ = false;
    bytes_held_ = 0;
    events_held_ = 0;
    return events;
}

} // namespace posixtrace
