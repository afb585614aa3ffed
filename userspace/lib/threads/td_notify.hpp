#pragma once
#include <cstdint>

namespace posixtrace {

// The event reporting address of TD event `event` (1..14): a function of
// the library, called in the controlling process each time a reported event
// of that type reaches it, so that a debugger's breakpoint there fires.
// 0 for an event number out of range.
uintptr_t td_report_address(unsigned event);

// Calls the reporting function of `event`.
void td_report(unsigned event);

} // namespace posixtrace
