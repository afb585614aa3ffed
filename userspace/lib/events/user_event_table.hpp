#pragma once
#include <trace.h>

#include <cstdint>

// The user event names of a process, published where a tracer attaching by
// pid can read them (process_vm_readv at the address of this exported
// symbol): a versioned, fixed layout shared by every libposixtrace. A name is
// written before `count` is raised (release), so a reader that sees `count`
// sees every name below it.
extern "C" {
struct pt_user_event_table {
    uint32_t magic;    // kUserEventTableMagic once initialised
    uint32_t version;  // kUserEventTableVersion
    uint32_t capacity; // TRACE_USER_EVENT_MAX
    uint32_t count;    // names[0 .. count) are valid; id = POSIX_TRACE_USER_EVENT_FIRST + index
    char names[TRACE_USER_EVENT_MAX][TRACE_EVENT_NAME_MAX];
};
}

namespace posixtrace {

inline constexpr uint32_t kUserEventTableMagic = 0x45555450; // "PTUE"
inline constexpr uint32_t kUserEventTableVersion = 1;
inline constexpr const char kUserEventTableSymbol[] = "posix_trace_user_event_table";

// This process's table.
pt_user_event_table &local_user_event_table();

} // namespace posixtrace
