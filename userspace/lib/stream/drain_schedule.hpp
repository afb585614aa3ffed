#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>

namespace posixtrace {

// When the drain thread makes its next pass: at once while the merge is
// behind, shortly while a flush waits for the merge's safe point to pass its
// time, every period while the stream records or has work waiting, and only
// when woken otherwise. After passes that found nothing for a while it
// dozes: a pass costs a look at every ring, and a process with a thousand
// threads has a thousand lanes. Its sources are told once (each wakes the
// drain as its rings fill: RecordSource::doze), and any news ends the doze.
class DrainSchedule {
public:
    // The BPF side wakes the drain earlier when a ring passes a quarter full
    // (a loop ring: as each of its quarters begins).
    static constexpr uint64_t kPeriodNs = 1'000'000;
    static constexpr uint64_t kFlushRetryNs = 50'000;
    static constexpr uint64_t kQuietPassesBeforeDozing = 16;
    static constexpr uint64_t kDozingPeriodNs = 5'000'000;
    // A dozing drain's passes take at most this share of a CPU: a pass that
    // looks at a thousand idle lanes (a page each) took about 0.6 ms on a
    // host whose memory was slow to reach, so the doze lengthens with the
    // pass, up to kLongestDozeNs.
    static constexpr uint64_t kDozeToPassRatio = 40;
    static constexpr uint64_t kLongestDozeNs = 50'000'000;

    struct State {
        bool merge_behind = false;  // the last pass left records it had time to read
        bool flush_waiting = false; // a flush waits for the safe point
        bool recording = false;     // the stream runs
        bool work_waiting = false;  // system events, records held, processes to look at
    };
    struct Sleep {
        std::optional<uint64_t> ns; // nullopt: until woken
        bool starts_dozing = false; // the sources are to be told
    };
    Sleep next(const State &state);
    // A pass ended; whether it saw any ring's producer move, and how long
    // it took.
    void pass_done(bool found_new, uint64_t took_ns)
    {
        quiet_passes_ = found_new ? 0 : quiet_passes_ + 1;
        last_pass_took_ns_ = took_ns;
    }

private:
    uint64_t doze_ns() const
    {
        return std::clamp(last_pass_took_ns_ * kDozeToPassRatio, kDozingPeriodNs, kLongestDozeNs);
    }

    uint64_t quiet_passes_ = 0;
    uint64_t last_pass_took_ns_ = 0;
    bool dozing_ = false;
};

inline DrainSchedule::Sleep DrainSchedule::next(const State &state)
{
    if (state.merge_behind) // more to read at once, after readers had the lock
        return {0};
    if (state.flush_waiting)
        return {kFlushRetryNs};
    if (!state.recording && !state.work_waiting)
        return {std::nullopt};
    if (state.work_waiting || quiet_passes_ < kQuietPassesBeforeDozing) {
        dozing_ = false;
        return {kPeriodNs};
    }
    bool starts = !dozing_;
    dozing_ = true;
    return {doze_ns(), starts};
}

} // namespace posixtrace
