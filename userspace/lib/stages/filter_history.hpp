#pragma once
#include <trace.h>

#include <cstdint>
#include <deque>

#include "events/event_set.hpp"

namespace posixtrace {

// The stream's filter now, and the filters set since the oldest record not
// yet delivered, each with the time it took effect (the first: the one
// before them all). A record the stream renumbers (an exec'd image's user
// event) is checked against the filter in force at its stamp, not at its
// delivery. Stamps are CLOCK_MONOTONIC.
class FilterHistory {
public:
    const trace_event_set_t &current() const { return current_; }
    bool filters(trace_event_id_t id) const { return event_set_contains(current_, id); }
    bool filtered_at(trace_event_id_t id, uint64_t timestamp_ns) const
    {
        for (auto change = changes_.rbegin(); change != changes_.rend(); ++change)
            if (change->from_ns <= timestamp_ns || std::next(change) == changes_.rend())
                return event_set_contains(change->filter, id);
        return filters(id);
    }
    // The filter of now, not yet in the history: the stream tries it first,
    // and may go back.
    void set_current(const trace_event_set_t &filter) { current_ = filter; }
    // The current filter took effect at `from_ns`, after `before`.
    void took_effect(const trace_event_set_t &before, uint64_t from_ns)
    {
        if (changes_.empty())
            changes_.push_back({0, before});
        changes_.push_back({from_ns, current_});
    }
    // Nothing stamped before `delivered_ns` is still to come.
    void forget_before(uint64_t delivered_ns)
    {
        while (changes_.size() > 1 && changes_[1].from_ns <= delivered_ns)
            changes_.pop_front();
        if (changes_.size() == 1 && changes_[0].from_ns <= delivered_ns)
            changes_.clear(); // the filter of now
    }

private:
    struct Change {
        uint64_t from_ns;
        trace_event_set_t filter;
    };
    trace_event_set_t current_{};
    std::deque<Change> changes_;
};

} // namespace posixtrace
