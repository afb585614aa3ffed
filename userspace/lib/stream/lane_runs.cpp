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
// and the chunk stays with the merge: it judges each record there.
bool LaneRuns::measure(const RingMerger::Chunk &chunk, const Judge &judge, Measured &measured) const
{
    bool first = true;
    uint32_t numbered_id = UINT32_MAX; // the latest id judged: a chunk has few
    for (uint64_t at = chunk.from; at < chunk.to;) {
        RecordRing::Record next = chunk.ring.at(at);
        at += next.size;
        if (next.slot == RecordRing::Slot::Busy)
            return false;
        if (next.slot == RecordRing::Slot::Discarded)
            continue;
        const pt_record &record = *next.record;
        if (first &&
            (record.timestamp_ns < chunk.not_before_ns || !judge.kept(record.timestamp_ns)))
            return false;
        first = false;
        if (record.event_id != numbered_id) {
            if (!judge.as_numbered(record))
                return false;
            numbered_id = record.event_id;
            if (std::find(measured.ids.begin(), measured.ids.end(), numbered_id) ==
                measured.ids.end())
                measured.ids.push_back(numbered_id);
        }
        measured.event_bytes += log::BlockEncoder::event_record_bytes(record.data_len);
        measured.latest_ns = record.timestamp_ns;
    }
    return true;
}

size_t LaneRuns::names_bytes(const std::vector<std::pair<uint32_t, std::string>> &names,
                             const log::BlockEncoder &block) const
{
    size_t bytes = 0;
    for (const auto &[id, name] : names)
        if (!block.named(id))
            bytes += log::BlockEncoder::name_record_bytes(name);
    return bytes;
}

void LaneRuns::encode(const RingMerger::Chunk &chunk,
                      const std::vector<std::pair<uint32_t, std::string>> &names)
{
    log::BlockEncoder &block = open_->block;
    for (uint64_t at = chunk.from; at < chunk.to;) {
        RecordRing::Record next = chunk.ring.at(at);
        at += next.size;
        if (next.slot != RecordRing::Slot::Committed)
            continue;
        const pt_record &record = *next.record;
        if (!block.named(record.event_id))
            for (const auto &[id, name] : names)
                if (id == record.event_id)
                    block.add_name(id, name);
        block.add_event(record, record.data, realtime_offset_ns_);
    }
}

std::optional<LaneRuns::Taken> LaneRuns::take(const RingMerger::Chunk &chunk, const Judge &judge)
{
    Measured measured;
    if (!valid() ||
        open_in_log_bytes_ + bytes_held_ + size_t(chunk.to - chunk.from) > kMostOpenBytes ||
        !measure(chunk, judge, measured))
        return std::nullopt;
    std::vector<std::pair<uint32_t, std::string>> names;
    for (uint32_t id : measured.ids)
        if (id >= POSIX_TRACE_USER_EVENT_FIRST)
            if (std::optional<std::string> name = judge.name_of(id))
                names.emplace_back(id, std::move(*name));
    if (!open_ || measured.event_bytes + names_bytes(names, open_->block) > open_->block.room()) {
        close_run();
        if (!open_run())
            return std::nullopt; // every slot is held or being written
    }
    log::BlockEncoder &block = open_->block;
    size_t before = block.bytes();
    if (measured.event_bytes + names_bytes(names, block) > block.room())
        return std::nullopt; // more names than a run holds: the merge takes them
    uint32_t events_before = block.events();
    encode(chunk, names);
    size_t added = block.bytes() - before;
    bytes_held_ += added;
    events_held_ += block.events() - events_before;
    return Taken{added, block.events() - events_before, measured.latest_ns};
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
