#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sources/lanes/chunk_pool.hpp"
#include "stream/record_ring.hpp"
#include "util/fork_wiped_memory.hpp"

namespace posixtrace {

// A ring in the process's own memory, in the layout and protocol of a BPF
// ring buffer, so the merge reads it as it reads the kernel's (RecordRing).
// It has one writer at a time, which the caller guarantees (a lane per
// thread and nesting level: docs/architecture.md), so reserving takes two
// stores and no read-modify-write. The drain thread reads it.
// Its memory is chunks of a ChunkPool, taken as the writer reaches the end
// of the one it writes and handed back as the reader passes them: what a
// ring holds is bounded by what the pool allows, not by a size of its own.
// A record that would run past the end of a chunk starts the next one,
// behind a discarded record that fills the rest, so no record is split. A
// child of fork finds the chunks zeroed, its own (ForkWipedMemory): a write
// the fork interrupted ends there, and a child never corrupts the parent's
// stream.
// A writer with no chunk left may take back its oldest chunk that the reader
// has not claimed (POSIX_TRACE_LOOP keeps the newest): both move one
// position, the claim, with a compare-and-swap, so a chunk is either the
// reader's, claimed, or the writer's to take back, never both.
class LocalRing final : public RecordRing {
public:
    // `most_chunks`: a power of two, the most chunks the ring holds at once.
    LocalRing(ChunkPool &pool, uint32_t most_chunks);

    // What a writer does when its chunk is full, read then and not at each
    // record.
    // - It makes room by taking back its oldest chunk the reader has not
    //   claimed (POSIX_TRACE_LOOP keeps the newest): when the pool has no
    //   chunk for it, and first of all once the ring holds `after_bytes`, so
    //   that one busy writer does not keep the pool from the others (0:
    //   never takes back). The records taken back are added to `counted`.
    // - A reader that sleeps longer because nothing came sets
    //   `reader_dozing`: the first writer to fill a chunk clears it and
    //   writes `reader_wakeup_fd` (an eventfd), one write for a whole burst.
    //   The reader keeps that descriptor open for good: a writer preempted
    //   between the two steps must not write into a descriptor reused.
    struct ChunkRules {
        std::atomic<uint64_t> after_bytes{0};
        std::atomic<uint64_t> counted{0};
        std::atomic<uint32_t> reader_dozing{0};
        int reader_wakeup_fd = -1;
    };
    // The writer's side. A record with room for `data_len` bytes of data,
    // busy until commit(); nullptr, counted in lost(), when the ring has no
    // room for it (the pool has no chunk for it, and it has none to take
    // back under `rules`). Async-signal-safe.
    pt_record *reserve(uint32_t data_len, ChunkRules *rules = nullptr);
    void commit(pt_record *record);
    // Gives up a reserved record: the reader skips it.
    void discard(pt_record *record);
    // The rest of the chunk being written is a discarded filler, so the
    // reader passes it and hands the chunk back; the next record starts a
    // chunk. Returns the producer position. By the writer, or by whoever
    // holds the ring while no writer can take it (a lane between threads).
    uint64_t close_chunk();
    // Records reserve() had no room for, and records given up: only grows.
    uint64_t lost() const
    {
        return lost_.load(std::memory_order_relaxed) + given_up_.load(std::memory_order_relaxed);
    }

    // The reader's side, besides RecordRing.
    bool in_timestamp_order() const override { return true; }
    uint64_t chunk_bytes() const override { return pool_.chunk_bytes(); }
    // Only a chunk the reader has claimed (its writer takes none of those
    // back) and that no record given up may still be written in.
    std::optional<LentChunk> lend_chunk(uint64_t position) override;
    // A window of `ahead` bytes at a time, claimed: the writer takes back
    // only what lies past it. A ring whose writer takes nothing back is
    // read whole: kWhole.
    Readable readable_within(uint64_t &scanned, uint64_t ahead);
    static constexpr uint64_t kWhole = UINT64_MAX;
    // About what a round of the merge reads (kRecordsReadEachRound records
    // of a few dozen bytes): a chunk.
    static constexpr uint64_t kClaimedAhead = 64 * 1024;
    Readable readable(uint64_t &scanned) override
    {
        return readable_within(scanned, kClaimedAhead);
    }
    // Gives the producer back the space before `position`, and the pool the
    // chunks wholly before it.
    void release(uint64_t position) override;
    // The same for a view of this ring (LaneView) that the merge reads.
    void hand_back_chunks_before(uint64_t position);
    // Everything reserved so far is left unread (its writer may still
    // finish a record: it stays its own until then). `writer_gone`: nobody
    // can write the ring (a lane no thread holds), so every chunk before
    // the producer goes back.
    void skip_unread(bool writer_gone = false);
    // The writer's record still busy, if any, is discarded and counted lost.
    // Only once its writer will not write it any more: by the writer's
    // thread once it knows the call that reserved it is gone, or by the
    // reader once the thread has exited. Returns how many (0 or 1).
    // Async-signal-safe.
    uint64_t abandon_unfinished();
    // The record at `position`, if still busy, is discarded, for a reader
    // that counts and reports the loss itself (where the record held the
    // merge back, which only it knows): not in lost(). False if its writer
    // finished it first. The reader only believes the writer gone: should
    // it write on, it writes in a chunk the pool never hands to another.
    bool give_up_reported_by_reader(uint64_t position);

private:
    uint32_t *table() const { return reinterpret_cast<uint32_t *>(table_.data()); }
    uint32_t &entry_of(uint64_t position) const
    {
        return table()[(position / pool_.chunk_bytes()) & (most_chunks_ - 1)];
    }
    bool start_chunk(uint64_t position, ChunkRules *rules);
    uint32_t take_back_oldest_chunk(uint64_t position, std::atomic<uint64_t> &counted);
    uint64_t committed_records_in(uint32_t chunk) const;
    uint64_t claim(uint64_t wanted, bool &taken_back);
    void note_taken_back(uint64_t from, uint64_t to);
    void pass_taken_back(uint64_t &scanned);
    bool discard_if_busy(uint64_t position);

    ChunkPool &pool_;
    uint32_t most_chunks_;
    ForkWipedMemory table_;
    uint64_t producer_pos_ = 0; // written by the writer, read by the merge
    uint64_t consumer_pos_ = 0; // written by the merge (release()), read by the writer
    // The writer's: the end of the chunk it writes, and the position + 1 of
    // its latest record (the only one that can be busy) while busy, else 0.
    uint64_t chunk_end_ = 0;
    uint64_t unfinished_at_ = 0;
    // Written by the reader, read by the writer: the chunks before it are
    // the pool's, and their entries in the table free.
    uint64_t handed_back_ = 0;
    // Below it, the reader's; whole chunks at or past it, the writer's to
    // take back. Moved by both, with compare-and-swap.
    uint64_t claim_ = 0;
    // The reader's: the claim it last made, and the range the writer took
    // back since, which it has not passed yet (one at a time: the reader
    // claims no more until it has).
    uint64_t claimed_ = 0;
    uint64_t taken_from_ = 0, taken_to_ = 0;
    std::atomic<uint64_t> lost_{0};     // written by the writer alone
    std::atomic<uint64_t> given_up_{0}; // by the writer's thread and the reader
};

} // namespace posixtrace
