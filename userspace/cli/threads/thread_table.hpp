#pragma once
// The threads of one traced process as their TD events describe them: what
// `posixtrace threads` shows. Fed in timestamp order by the stream.
#include <posix_trace/thread_db.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace posixtrace::cli {

struct ThreadRow {
    pid_t tid = 0;
    std::string name;
    char state = '?'; // R on a CPU, W runnable, S sleeping, L waiting for a lock, T stopped, X exited
    int cpu = -1;        // the CPU it runs or last ran on
    uint64_t run_ns = 0; // time on a CPU while traced
    uint64_t on_cpu_since_ns = 0; // 0: not on a CPU now
    uint64_t voluntary = 0;       // td_sleep
    uint64_t involuntary = 0;     // td_preempt
    uint64_t signals = 0;         // td_catchsig
    uint64_t lock_waits = 0;      // td_lock_try
    uint64_t timeouts = 0;        // td_timeout
    bool created = false;         // td_create seen: born while traced
    bool exited = false;          // td_death seen
    int exit_status = 0;          // wait status at td_death
    uint64_t exited_at_ns = 0;
    bool waiting_for_lock = false;

    // Time on a CPU up to `now_ns`, counting the current stretch.
    uint64_t run_time(uint64_t now_ns) const;
};

struct ThreadTotals {
    uint64_t created = 0, exited = 0, reaped = 0;
    uint64_t switches = 0, signals = 0, lock_waits = 0, timeouts = 0;
    uint64_t live = 0; // td_concurrency's latest value, else counted rows
    bool live_from_kernel = false;
};

class ThreadTable {
public:
    // A thread that existed before tracing began (from /proc).
    void seed(pid_t tid, const std::string &name, char state, int cpu);
    // One td_* event (`event` is its TD_* number), stamped `ns` (CLOCK_REALTIME).
    void apply(td_event_e event, const td_event_data &data, uint64_t ns);

    // Every thread seen, in the order they appeared. The kernel reuses a
    // tid once its thread is gone (pid_max is 32768 on small machines), so a
    // tid can have several rows: only the last is the live one.
    const std::vector<ThreadRow> &rows() const { return rows_; }
    // The row of the thread that holds `tid` now (or last held it), if any.
    const ThreadRow *current(pid_t tid) const;
    const ThreadTotals &totals() const { return totals_; }
    size_t live_rows() const;

private:
    ThreadRow &row(pid_t tid, const char *name);
    ThreadRow &new_row(pid_t tid);
    void switched_off(ThreadRow &thread, uint64_t state_left, uint64_t ns);

    std::vector<ThreadRow> rows_;
    std::unordered_map<pid_t, size_t> current_row_of_tid_;
    ThreadTotals totals_;
};

// The threads of `pid` now, read from /proc/PID/task (name, state, CPU).
void seed_from_proc(ThreadTable &table, pid_t pid);

} // namespace posixtrace::cli
