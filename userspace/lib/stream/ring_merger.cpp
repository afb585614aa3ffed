#include "stream/ring_merger.hpp"

#include <algorithm>

namespace posixtrace {

void RingMerger::add_ring(RingReader ring)
{
    rings_.push_back(std::move(ring));
    floors_ns_.push_back(0);
}

void RingMerger::merge(uint64_t watermark_ns, uint64_t pass_start_ns,
                       std::deque<SystemEvent> &system, const RingSink &on_record,
                       const SystemSink &on_system)
{
    const size_t system_source = rings_.size();
    struct Head {
        uint64_t timestamp_ns;
        size_t source;
        bool operator>(const Head &other) const { return timestamp_ns > other.timestamp_ns; }
    };
    std::vector<Head> heap;
    heap.reserve(rings_.size() + 1);
    auto push_head = [&](size_t source) {
        const pt_record *head = nullptr;
        if (source == system_source) {
            head = system.empty() ? nullptr : &system.front().header;
        } else {
            bool busy;
            head = rings_[source].peek(&busy);
            if (busy)
                watermark_ns = std::min(watermark_ns, floors_ns_[source]);
            else if (!head) // empty now: whatever it gets next is stamped later
                floors_ns_[source] = std::max(floors_ns_[source], pass_start_ns);
        }
        if (head) {
            heap.push_back({head->timestamp_ns, source});
            std::push_heap(heap.begin(), heap.end(), std::greater<>{});
        }
    };
    for (size_t source = 0; source <= system_source; ++source)
        push_head(source);

    batch_.clear();
    system_batch_.clear();
    bool in_order = true;
    auto add = [&](Delivery delivery) {
        in_order =
            in_order && (batch_.empty() || batch_.back().timestamp_ns <= delivery.timestamp_ns);
        batch_.push_back(delivery);
    };
    while (!heap.empty() && heap.front().timestamp_ns < watermark_ns) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
        size_t source = heap.back().source;
        heap.pop_back();
        if (source == system_source) {
            add({system.front().header.timestamp_ns, nullptr, system_batch_.size()});
            system_batch_.push_back(std::move(system.front()));
            system.pop_front();
        } else {
            const pt_record *record = rings_[source].peek();
            floors_ns_[source] = std::max<uint64_t>(floors_ns_[source], record->timestamp_ns);
            add({record->timestamp_ns, record, 0});
            rings_[source].advance();
        }
        push_head(source);
    }
    deliver_batch(in_order, on_record, on_system);
    for (auto &ring : rings_)
        ring.commit();
}

// A BPF program that interrupts another on the same CPU (a wakeup in an
// interrupt) reserves its record after the interrupted one's but stamps it
// first: one ring is then not quite in timestamp order. Both records are in
// the same pass (the nested one is committed first), so sorting the pass
// restores the order. The records stay valid until the rings are committed.
void RingMerger::deliver_batch(bool in_order, const RingSink &on_record,
                               const SystemSink &on_system)
{
    if (!in_order)
        std::stable_sort(batch_.begin(), batch_.end(), [](const Delivery &a, const Delivery &b) {
            return a.timestamp_ns < b.timestamp_ns;
        });
    for (const Delivery &delivery : batch_) {
        if (delivery.record)
            on_record(*delivery.record);
        else
            on_system(std::move(system_batch_[delivery.system_index]));
    }
    batch_.clear();
    system_batch_.clear();
}

uint64_t RingMerger::discard_all()
{
    uint64_t dropped = 0;
    for (auto &ring : rings_) {
        for (; ring.peek(); ring.advance())
            ++dropped;
        ring.commit();
    }
    return dropped;
}

} // namespace posixtrace
