#pragma once
#include <cstdint>

#include "posixtrace.h"

namespace posixtrace {

// What the merge reads from (RingMerger): a ring of records laid out as a BPF
// ring buffer's, each behind an 8-byte header (its length, a busy bit while
// it is being written, a discard bit), looked at in place by position, as
// the producer and consumer counters count bytes. The kernel's per-CPU rings
// are one kind (RingReader); a ring written by other means follows the same
// protocol (a record is reserved, busy, before it is stamped, and the
// producer position covers it only once its header says busy), and the
// merge's argument (docs/architecture.md, "Ordering") holds for it as is.
class RecordRing {
public:
    virtual ~RecordRing() = default;

    // False if the ring could not be mapped; the merge then skips it.
    virtual bool mapped() const = 0;
    // How far the producer has reserved (acquire: the headers below it are
    // readable).
    virtual uint64_t producer() const = 0;
    // The consumer position published so far.
    virtual uint64_t released() const = 0;

    enum class Slot { Committed, Discarded, Busy };
    struct Record {
        Slot slot;
        const pt_record *record; // when Committed
        uint64_t size;           // bytes to the next record (when not Busy)
    };
    // What is at `position`, which must be below producer().
    virtual Record at(uint64_t position) const = 0;

    // Gives the producer back the space before `position`.
    virtual void release(uint64_t position) = 0;
};

} // namespace posixtrace
