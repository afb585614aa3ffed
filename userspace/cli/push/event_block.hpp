#pragma once
// The rows push sends: each event's values (EventRows) as a row of the
// events table, in a block of ClickHouse's Native format.
#include <string>

#include "../export/event_rows.hpp"
#include "native_block.hpp"

namespace posixtrace::cli {

class EventBlock {
public:
    // Where the table keeps the payload: `data`, its bytes (data_hex is
    // computed from it), or data_hex, as text (a table an earlier push made).
    enum class Payload { Bytes, Hex };

    // `description` has an origin: the table's UUID columns need one.
    EventBlock(const LogDescription &description, Payload payload);

    void append(const EventRow &row);
    size_t rows() const { return block_.rows(); }
    size_t value_bytes() const { return block_.value_bytes(); }
    // The block into `out`, and this one empty for the next rows.
    void finish(std::string &out) { block_.finish(out); }

    // The INSERT that takes these blocks.
    static std::string insert_query(Payload payload);

private:
    Payload payload_;
    std::string host_, stream_name_;
    uint8_t boot_id_[16], stream_id_[16];
    NativeBlock block_;
    std::string hex_;
};

} // namespace posixtrace::cli
