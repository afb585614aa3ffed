#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "posixtrace.h"
#include "stream/record_ring.hpp"
#include "util/fork_wiped_memory.hpp"

namespace posixtrace {

// One CPU's loop ring (posixtrace.h) as the merge reads it. The programs
// overwrite the ring's oldest records whenever they need room, even under
// the merge's feet, so each look at the ring copies what is new into memory
// of its own, at the same positions, and checks afterwards that the
// programs had not reached it meanwhile. The merge reads the copy as any
// ring; its producer position is the ring's own, so what the merge's
// bound relies on (a record is reserved before it is stamped) holds as is.
//
// Records the programs overwrote before they were copied are counted
// exactly, from the numbers they carry, and the copy goes on at the next
// chunk that is whole. Under POSIX_TRACE_LOOP what the merge holds older
// than them goes too (RecordRing::Readable::taken_back), so that what the
// stream keeps is its newest records, with no hole.
//
// The copy has room for two rounds of the ring. The merge's bound at a ring
// moves on only once it has read up to the producer position of a later
// look, and between two looks the programs write up to a round (more, and
// the copy passes what they overwrote). With room for one round only, the
// records the merge must hold back (stamped within its clock margin of the
// look before) could leave that position out of reach, with nothing moving
// again until the programs wrote a round more.
class LoopRingMirror final : public RecordRing {
public:
    // `entry`: the ring's mapped entry; `overwritten`: where the records
    // the programs overwrote before they were copied are counted. Without
    // memory for the copy the mirror is not mapped().
    LoopRingMirror(const uint8_t *entry, size_t ring_bytes, uint64_t tag_key,
                   std::atomic<uint64_t> &overwritten);

    void refresh() override;
    Readable readable(uint64_t &scanned) override;
    // The drain read the count of what the programs overwrote: the records
    // past a stretch, held until then, may be read if the count includes
    // the stretch's.
    void count_read() { reported_look_ = accounted_look_; }

private:
    struct Copied {
        uint64_t end; // past the last record copied
        bool whole;   // stopped at the head, not at a record being written or for room
        bool damaged; // at a header no writer makes: the programs wrote over it meanwhile
    };
    // Copies records from the frontier on, up to `head` at most, with the
    // numbers of those that have one.
    Copied copy_from_frontier(uint64_t head, std::vector<uint32_t> &numbers);
    // The programs overwrote the frontier: the copy resumes at `resume`, a
    // chunk's start, past the stretch.
    void pass_overwritten(uint64_t resume);
    uint64_t resume_past_writers(uint64_t head) const;
    // Counts what was overwritten among the records numbered before
    // `sequence`, once every record reserved before it was seen.
    void account(uint64_t sequence);
    const pt_loop_header *source_header(uint64_t position) const;
    uint8_t *mirror_at(uint64_t position)
    {
        return mirror_.data() + (position & (mirror_bytes_ - 1));
    }

    const pt_loop_ring_meta *meta_;
    const uint8_t *source_; // the ring's data
    size_t bytes_;          // the ring's
    size_t mirror_bytes_;   // the copy's: two rounds
    uint64_t tag_key_;
    std::atomic<uint64_t> &overwritten_;
    // Pages of its own rather than the heap: twice as large as the ring, and
    // unshared with a child the traced program forks.
    ForkWipedMemory mirror_;
    uint64_t consumer_ = 0; // released by the merge (RecordRing::release)
    uint64_t head_ = 0;     // the ring's head at the last look: the producer
    uint64_t frontier_ = 0; // copied up to here
    bool claimed_ = true;   // the last look copied all it saw reserved
    bool more_ = false;     // the last look stopped for room in the copy
    // The stretch the programs overwrote, from the first position not
    // copied to the chunk start the copy resumed at; not passed by the
    // merge yet when gap_from_ < gap_to_.
    uint64_t gap_from_ = 0, gap_to_ = 0;
    bool gap_signaled_ = false;
    // The records past a stretch wait for its count to be read, so that the
    // report of the records overwritten comes before them. Looks are
    // numbered from 1; 0: none.
    bool stretch_unreported() const { return stretch_look_ && reported_look_ <= stretch_look_; }
    uint64_t looks_ = 0;
    uint64_t stretch_look_ = 0;   // the latest look that found a stretch
    uint64_t accounted_look_ = 0; // the latest look that counted every record numbered before it
    uint64_t reported_look_ = 0;  // accounted_look_ when the count was last read
    // Numbers below `counted_to_` are accounted for; those of records
    // copied at or past it wait in `seen_`.
    uint64_t counted_to_ = 0;
    std::vector<uint32_t> seen_;
};

} // namespace posixtrace
