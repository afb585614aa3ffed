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
// whole before any of its events is handed out, so memory stays bounded by
// one block whatever the size of the log.
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

    // 0 with *unavailable set at the end; EINVAL when the log is damaged
    // there (and at every later call, until rewind()).
    int next_event(const EventDestination &to, int *unavailable);
    int next_event(const EventDestination &to, int *unavailable, WaitMode mode,
                   const timespec *) override
    {
        return mode == WaitMode::Try ? EINVAL : next_event(to, unavailable);
    }
    void rewind();

    std::optional<std::string> event_name(trace_event_id_t id) const override;
    void next_event_type(trace_event_id_t &id, int &unavailable) override;
    void rewind_event_types() override;

private:
    int read_header();
    bool loop_slots_as_written(uint64_t log_size) const;
    void read_trailer();
    bool read_exact(uint64_t offset, void *into, size_t length) const;
    static int parse_name_table(const uint8_t *at, size_t length,
                                std::map<trace_event_id_t, std::string> &into);
    void index_loop_slots();
    std::optional<uint64_t> sequence_in_slot(uint64_t slot) const;
    bool slot_cut_off(uint64_t sequence) const;
    // Loads the next block into block_; false at the end (error_ set on damage).
    bool load_next_block();
    bool load_block_at(uint64_t offset, uint64_t expected_sequence, bool may_be_torn);
    bool check_records();
    void copy_out(size_t offset, const EventDestination &to) const;

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

    // Reading position.
    uint64_t next_block_offset_ = 0; // APPEND / UNTIL_FULL
    uint64_t next_sequence_ = 0;
    uint64_t newest_sequence_ = 0; // LOOP
    bool any_block_ = false;       // LOOP: a slot was ever written
    std::vector<uint8_t> block_;
    std::vector<size_t> events_; // offsets of the events in block_
    size_t next_in_block_ = 0;
    bool ended_ = false;
    int error_ = 0;
    std::optional<trace_event_id_t> type_cursor_;
};

} // namespace posixtrace::log
