#include "threads/td_notify.hpp"

#include <posix_trace/thread_db.h>

#include <iterator>

// One function per event type, exported so a debugger finds them by name.
// noipa: they must stay distinct functions with distinct addresses (the
// compiler would otherwise merge their identical empty bodies).
#define POSIXTRACE_TD_REPORT_FUNCTION(name)                                                        \
    extern "C" __attribute__((visibility("default"), noipa, used)) void                             \
        posix_trace_td_report_##name(void)                                                         \
    {                                                                                              \
        asm volatile("" ::: "memory");                                                             \
    }

POSIXTRACE_TD_REPORT_FUNCTION(ready)
POSIXTRACE_TD_REPORT_FUNCTION(sleep)
POSIXTRACE_TD_REPORT_FUNCTION(switchto)
POSIXTRACE_TD_REPORT_FUNCTION(switchfrom)
POSIXTRACE_TD_REPORT_FUNCTION(lock_try)
POSIXTRACE_TD_REPORT_FUNCTION(catchsig)
POSIXTRACE_TD_REPORT_FUNCTION(idle)
POSIXTRACE_TD_REPORT_FUNCTION(create)
POSIXTRACE_TD_REPORT_FUNCTION(death)
POSIXTRACE_TD_REPORT_FUNCTION(preempt)
POSIXTRACE_TD_REPORT_FUNCTION(pri_inherit)
POSIXTRACE_TD_REPORT_FUNCTION(reap)
POSIXTRACE_TD_REPORT_FUNCTION(concurrency)
POSIXTRACE_TD_REPORT_FUNCTION(timeout)

namespace posixtrace {
namespace {

using ReportFunction = void (*)(void);
constexpr ReportFunction kReportFunctions[] = {
    posix_trace_td_report_ready,       posix_trace_td_report_sleep,
    posix_trace_td_report_switchto,    posix_trace_td_report_switchfrom,
    posix_trace_td_report_lock_try,    posix_trace_td_report_catchsig,
    posix_trace_td_report_idle,        posix_trace_td_report_create,
    posix_trace_td_report_death,       posix_trace_td_report_preempt,
    posix_trace_td_report_pri_inherit, posix_trace_td_report_reap,
    posix_trace_td_report_concurrency, posix_trace_td_report_timeout};
static_assert(std::size(kReportFunctions) == TD_MAX_EVENT_NUM);

} // namespace

uintptr_t td_report_address(unsigned event)
{
    if (event < TD_MIN_EVENT_NUM || event > TD_MAX_EVENT_NUM)
        return 0;
    return reinterpret_cast<uintptr_t>(kReportFunctions[event - 1]);
}

void td_report(unsigned event)
{
    if (event >= TD_MIN_EVENT_NUM && event <= TD_MAX_EVENT_NUM)
        kReportFunctions[event - 1]();
}

} // namespace posixtrace
