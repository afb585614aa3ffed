#pragma once
#include <cstdint>

namespace posixtrace {

// Records stamped before a cut-off are not the stream's: those before
// posix_trace_clear are gone with what it cleared; those before an
// UNTIL_FULL stream's restart were recorded before the kernel saw it stop,
// and are refused (counted). Stamps are CLOCK_MONOTONIC.
class CutOffs {
public:
    enum class Verdict { Keep, Cleared, Refused };
    Verdict of(uint64_t timestamp_ns) const
    {
        if (timestamp_ns < cleared_before_ns_)
            return Verdict::Cleared;
        return timestamp_ns < accepted_after_ns_ ? Verdict::Refused : Verdict::Keep;
    }
    bool cleared(uint64_t timestamp_ns) const { return timestamp_ns < cleared_before_ns_; }
    void clear_before(uint64_t ns) { cleared_before_ns_ = ns; }
    void accept_after(uint64_t ns) { accepted_after_ns_ = ns; }

private:
    uint64_t cleared_before_ns_ = 0;
    uint64_t accepted_after_ns_ = 0;
};

} // namespace posixtrace
