#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "stream/record_ring.hpp"
#include "util/mirrored_memory.hpp"

namespace posixtrace {

// A ring in the process's own memory, in the layout and protocol of a BPF
// ring buffer, so the merge reads it as it reads the kernel's
// (RecordRing). It has one writer at a time, which the caller guarantees (a
// lane per thread and nesting level: docs/architecture.md), so reserving
// takes two stores and no read-modify-write. The drain thread reads it.
// Its pages are not inherited by a child (a child that wrote here would
// corrupt the parent's stream).
class LocalRing final : public RecordRing {
public:
    // `bytes`: a power of two, at least a page.
    explicit LocalRing(size_t bytes);

    // The writer's side. A record with room for `data_len` bytes of data,
    // busy until commit(); nullptr, counted in lost(), when the ring has no
    // room for it (or could not be mapped). Async-signal-safe.
    pt_record *reserve(uint32_t data_len);
    void commit(pt_record *record);
    // Gives up a reserved record: the reader skips it.
    void discard(pt_record *record);
    // Records reserve() had no room for: only grows.
    uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }
    size_t bytes() const { return memory_.bytes(); }

    // The reader's side, besides RecordRing.
    // Everything reserved so far is left unread (its writer may still
    // finish a record: it stays its own until then).
    void skip_unread();
    // Records left busy by a writer that is gone are discarded. Only once
    // nobody can write the ring any more.
    void abandon_unfinished();

private:
    MirroredMemory memory_;
    uint64_t producer_pos_ = 0; // written by the writer, read by the merge
    uint64_t consumer_pos_ = 0; // written by the merge (release()), read by the writer
    std::atomic<uint64_t> lost_{0};
};

} // namespace posixtrace
