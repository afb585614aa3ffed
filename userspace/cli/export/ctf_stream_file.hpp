#pragma once
#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "byte_buffer.hpp"
#include "output_file.hpp"

namespace posixtrace::cli {

// The binary stream file of a CTF trace. CTF wants timestamps that never go
// back within a stream, and a log's order across CPUs can be off by a few
// microseconds: events wait in a window of a few thousand, ordered by
// timestamp, and the oldest goes out when the window is full. One still
// older than an event already written (rare: far out of order) is stamped
// with that event's time, and counted.
//
// Events leave the window into packets of about 64 KiB, each written behind
// its header and context (magic, stream id, first and last timestamps,
// sizes) once full. Memory: the window and one packet.
class CtfStreamFile {
public:
    explicit CtfStreamFile(std::string path);
    // One event: its class id, timestamp, and the bytes after its header
    // (context and payload).
    void add(uint32_t id, uint64_t timestamp_ns, ByteBuffer &&body);
    void close(); // writes the events still waiting and the last packet
    uint64_t restamped() const { return restamped_; }

private:
    struct Pending {
        uint64_t timestamp_ns;
        uint64_t sequence; // ties keep the log's order
        uint32_t id;
        ByteBuffer body;
        bool operator>(const Pending &other) const
        {
            return timestamp_ns != other.timestamp_ns ? timestamp_ns > other.timestamp_ns
                                                      : sequence > other.sequence;
        }
    };
    void emit(const Pending &event);
    void write_packet();

    OutputFile file_;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> window_;
    uint64_t sequence_ = 0;
    uint64_t restamped_ = 0;
    ByteBuffer packet_events_;
    bool written_any_ = false;
    uint64_t first_ns_ = 0; // of the packet being filled
    uint64_t last_ns_ = 0;  // of the last event written
};

} // namespace posixtrace::cli
