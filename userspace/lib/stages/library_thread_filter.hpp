#pragma once
#include <sys/types.h>

#include <cstdint>

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
    // td_concurrency of the creator's threads, less the library's alive then.
    bool corrects_concurrency(const pt_record &record) const;
    void correct_concurrency(const pt_record &record, pt_td_data &counted) const;

private:
    pid_t creator_; // the process whose library threads are hidden
    LibraryThreads::Snapshot threads_;
};

} // namespace posixtrace
