#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "stream/record_ring.hpp"
#include "util/fork_wiped_memory.hpp"

namespace posixtrace {

// A ring in the process's own memory, in the layout and protocol of a BPF
// ring buffer, so the merge reads it as it reads the kernel's
// (RecordRing). It has one writer at a time, which the caller guarantees (a
// lane per thread and nesting level: docs/architecture.md), so reserving
// takes two stores and no read-modify-write. The drain thread reads it.
// Its memory is mapped once, not mirrored as the kernel's rings are: a
// record that would run past the end is placed at the start, behind a
// discarded record that fills the rest, so no record wraps. A child of fork
// finds the pages zeroed, its own (ForkWipedMemory): a write the fork
// interrupted ends there, and a child never corrupts the parent's stream.
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
    // Records reserve() had no room for, and records given up: only grows.
    uint64_t lost() const
    {
        return lost_.load(std::memory_order_relaxed) + given_up_.load(std::memory_order_relaxed);
    }
    size_t bytes() const { return memory_.bytes(); }

    // The reader's side, besides RecordRing.
    // Everything reserved so far is left unread (its writer may still
    // finish a record: it stays its own until then).
    void skip_unread();
    // Records left busy by a writer that is gone are discarded and counted
    // lost. By the reader once nobody can write the ring any more, or by
    // the writer's thread once it knows the call that wrote them is gone.
    // Returns how many. Async-signal-safe.
    uint64_t abandon_unfinished();
    // The record at `position`, if still busy, is discarded and counted
    // lost; false if its writer finished it first (or another gave it up).
    bool give_up(uint64_t position);
    // The same, for a reader that counts and reports the loss itself (where
    // the record held the merge back, which only it knows): not in lost().
    bool give_up_reported_by_reader(uint64_t position);
    // Gives the pages back to the system; they read zero when next touched.
    // Only while nobody writes or reads the ring.
    void release_pages();

private:
    ForkWipedMemory memory_;
    uint64_t producer_pos_ = 0;         // written by the writer, read by the merge
    uint64_t consumer_pos_ = 0;         // written by the merge (release()), read by the writer
    std::atomic<uint64_t> lost_{0};     // written by the writer alone
    std::atomic<uint64_t> given_up_{0}; // by the writer's thread and the reader
};

} // namespace posixtrace
