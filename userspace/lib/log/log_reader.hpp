#pragma once
#include <sys/types.h>
#include <trace.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "attributes/attributes.hpp"
#include "events/readable_trace.hpp"
#include "log/log_format.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace::log {

// A trace log opened for analysis (posix_trace_open): the header and trailer
// are read once; events are read one block at a time, each block checked
// whole before any of its events is handed out. In a log whose blocks
// follow each other in time, memory stays bounded by one block whatever the
// size of the log; in one whose blocks overlap (version 2), the blocks
// whose events are not complete yet are held and merged, at most
// kMaxOverlapBytes of them.
class LogReader final : public ReadableTrace {
public:
    LogReader() = default; // use open()
    // 0, or EINVAL when the descriptor is not a readable trace log.
    static int open(int fd, std::unique_ptr<LogReader> &out);

    Attributes attributes() const override;
    posix_trace_status_info status() const;
    posix_trace_status_info report_status() override { return status(); }
    pid_t traced_pid() const { return traced_pid_; }
    bool closed_cleanly() const { return trailer_offset_.has_value(); }
    // The stream's counters as its shutdown wrote them; none in a log with
    // no trailer (cut short, or its stream still running).
    std::optional<posix_trace_counters> counters() override { return counters_; }

    // 0 with *unavailable set at the end; EINVAL when the log is damaged
    // there (and at every later call, until rewind()). A log still being
    // written in time order is read on as it grows (grew()).
    int next_event(const EventDestination &to, int *unavailable);
    int next_event(const EventDestination &to, int *unavailable, WaitMode mode,
                   const timespec *) override
    {
        return mode == WaitMode::Try ? EINVAL : next_event(to, unavailable);
    }
    void rewind();

    std::optional<TraceOrigin> origin() const override { return origin_; }
    std::optional<std::string> event_name(trace_event_id_t id) const override;
    void next_event_type(trace_event_id_t &id, int &unavailable) override;
    void rewind_event_types() override;

private:
    int read_header();
    bool loop_slots_as_written(uint64_t log_size) const;
    // The log grew since the reader met its end (next_event).
    bool grew();
    void read_trailer();
    bool read_exact(uint64_t offset, void *into, size_t length) const;
    // `used`, if given: the table's bytes.
    static int parse_name_table(const uint8_t *at, size_t length,
                                std::map<trace_event_id_t, std::string> &into,
                                size_t *used = nullptr);
    void index_loop_slots();
    std::optional<uint64_t> sequence_in_slot(uint64_t slot) const;
    bool slot_cut_off(uint64_t sequence) const;
    // Loads the next block and holds its events; false at the end (error_
    // set on damage).
    bool load_next_block();
    bool load_block_at(uint64_t offset, uint64_t expected_sequence, bool may_be_torn);
    bool check_records(std::vector<size_t> &events, uint64_t &complete_below_ns);
    // `block_end`: the end of the checked block the record is in.
    void copy_out(const uint8_t *record, const uint8_t *block_end,
                  const EventDestination &to) const;

    // A block read whole, and the offsets of its events not handed out yet.
    struct HeldBlock {
        std::vector<uint8_t> bytes;
        std::vector<size_t> events;
        size_t next;
        uint64_t order;   // blocks loaded before it
        uint64_t next_ns; // the stamp of events[next]
        bool after(const HeldBlock &other) const;
        void stamp_next();
    };
    void hold(std::vector<size_t> &&events);
    bool oldest_may_go() const;
    void hand_out_oldest(const EventDestination &to);
    void sift_down_oldest();

    mutable std::mutex mutex_;
    UniqueFd fd_;
    off_t base_ = 0;
    uint64_t file_size_ = 0; // from base_
    Attributes attributes_{};
    pid_t traced_pid_ = 0;
    uint64_t data_offset_ = 0;
    uint32_t slot_size_ = 0;
    uint64_t slot_count_ = 0;
    std::optional<uint64_t> trailer_offset_;
    posix_trace_status_info status_{};
    std::map<trace_event_id_t, std::string> names_;
    std::optional<TraceOrigin> origin_; // a log of minor version 1 or later
    std::optional<posix_trace_counters> counters_;

    // Reading position.
    uint64_t next_block_offset_ = 0; // APPEND / UNTIL_FULL
    uint64_t next_sequence_ = 0;
    uint64_t newest_sequence_ = 0; // LOOP
    bool any_block_ = false;       // LOOP: a slot was ever written
    bool overlapping_ = false;     // version 2: blocks may overlap in time
    std::vector<uint8_t> block_;   // the one being loaded
    size_t last_block_bytes_ = 0;  // the latest loaded
    std::vector<HeldBlock> held_;  // a heap, the oldest next event first
    size_t held_bytes_ = 0;
    uint64_t loaded_ = 0;
    uint64_t complete_below_ns_ = 0; // every event before it is read (version 1: all)
    bool ended_ = false;
    bool met_trailer_ = false; // reading reached a trailer the footer did not point to
    int error_ = 0;
    std::optional<trace_event_id_t> type_cursor_;
};

} // namespace posixtrace::log
