#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "posixtrace.h"
#include "stages/record_kind.hpp"
#include "util/library_threads.hpp"

namespace posixtrace {

// The trace system never traces itself: events about the library's own
// threads in the process that made the stream (by them, or the td_create
// of one) are left out, and td_concurrency counts the process's threads
// without them. The library's threads never call posix_trace_event(): a
// user event is always the application's, whatever thread once had its tid.
class LibraryThreadFilter {
public:
    explicit LibraryThreadFilter(pid_t creator = 0) : creator_(creator) {}
    // Once a merge pass, before its records are looked at.
    void refresh() { LibraryThreads::refresh(threads_); }
    bool hides(const pt_record &record, const uint8_t *data, RecordKind kind) const;
    // A td_concurrency event of the creator's: its data, counting the
    // process's threads less the library's alive then. Else nothing.
    std::optional<pt_td_data> corrected_concurrency(const pt_record &record,
                                                    const uint8_t *data) const;

private:
    pid_t creator_; // the process whose library threads are hidden
    LibraryThreads::Snapshot threads_;
};

} // namespace posixtrace
