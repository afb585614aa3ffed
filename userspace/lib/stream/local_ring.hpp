#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "stream/record_ring.hpp"

namespace posixtrace {

// A ring in the process's own memory, in the layout and protocol of a BPF
// ring buffer, so the merge reads it as it reads the kernel's
// (RecordRing). It has one writer at a time, which the caller guarantees (a
// lane per thread and nesting level: docs/architecture.md), so reserving
// takes two stores and no read-modify-write. The drain thread reads it.
//
// The data pages are mapped twice in a row, as the kernel maps its rings, so
// a record that wraps around the end is one block. They are not inherited
// by a child (MADV_DONTFORK): a child that wrote here would corrupt the
// parent's stream.
class LocalRing final : public RecordRing {
public:
    // `bytes`: a power of two, at least a page.
    explicit LocalRing(size_t bytes);
    ~LocalRing() override;
    LocalRing(const LocalRing &) = delete;
    LocalRing &operator=(const LocalRing &) = delete;

    bool mapped() const override { return data_ != nullptr; }
    uint64_t producer() const override { return producer_.load(std::memory_order_acquire); }
    uint64_t released() const override { return consumer_.load(std::memory_order_relaxed); }
    Record at(uint64_t position) const override;
    void release(uint64_t position) override;

    // The writer's side. A record with room for `data_len` bytes of data,
    // busy until commit(); nullptr, counted in lost(), when the ring has no
    // room for it (or could not be mapped). Async-signal-safe.
    pt_record *reserve(uint32_t data_len);
    void commit(pt_record *record);
    // Records reserve() had no room for: only grows.
    uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }
    size_t bytes() const { return bytes_; }

private:
    size_t bytes_;
    uint8_t *data_ = nullptr; // 2 * bytes_, the same pages twice
    std::atomic<uint64_t> producer_{0};
    std::atomic<uint64_t> consumer_{0};
    std::atomic<uint64_t> lost_{0};
};

} // namespace posixtrace
