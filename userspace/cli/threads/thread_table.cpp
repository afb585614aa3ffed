#include "thread_table.hpp"

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "util/text_file.hpp"

namespace posixtrace::cli {

uint64_t ThreadRow::run_time(uint64_t now_ns) const
{
    return run_ns + (on_cpu_since_ns && now_ns > on_cpu_since_ns ? now_ns - on_cpu_since_ns : 0);
}

void ThreadTable::seed(pid_t tid, const std::string &name, char state, int cpu)
{
    ThreadRow &thread = row(tid, name.c_str());
    // In /proc, R is runnable and t a tracing stop.
    thread.state = state == 'R' ? 'W' : state == 'D' ? 'S' : state == 't' ? 'T' : state;
    thread.cpu = cpu;
}

ThreadRow &ThreadTable::new_row(pid_t tid)
{
    current_row_of_tid_[tid] = rows_.size();
    ThreadRow &thread = rows_.emplace_back();
    thread.tid = tid;
    return thread;
}

const ThreadRow *ThreadTable::current(pid_t tid) const
{
    auto found = current_row_of_tid_.find(tid);
    return found == current_row_of_tid_.end() ? nullptr : &rows_[found->second];
}

ThreadRow &ThreadTable::row(pid_t tid, const char *name)
{
    auto found = current_row_of_tid_.find(tid);
    ThreadRow &thread = found == current_row_of_tid_.end() ? new_row(tid) : rows_[found->second];
    // Every event carries the thread's current name: renames show up at
    // its next event.
    if (name && *name)
        thread.name = name;
    return thread;
}

void ThreadTable::switched_off(ThreadRow &thread, uint64_t state_left, uint64_t ns)
{
    if (thread.on_cpu_since_ns && ns > thread.on_cpu_since_ns)
        thread.run_ns += ns - thread.on_cpu_since_ns;
    thread.on_cpu_since_ns = 0;
    // The kernel's task states a thread can leave its CPU in (sched_switch's
    // prev_state): __TASK_STOPPED, __TASK_TRACED.
    constexpr uint64_t kStopped = 0x4 | 0x8;
    if (!thread.exited)
        thread.state = state_left == 0           ? 'W'
                       : state_left & kStopped   ? 'T'
                       : thread.waiting_for_lock ? 'L'
                                                 : 'S';
}

void ThreadTable::apply(td_event_e event, const td_event_data &data, uint64_t ns)
{
    char name[sizeof data.name + 1] = {};
    std::memcpy(name, data.name, sizeof data.name);
    if (event == TD_CREATE) {
        const ThreadRow *reused = current(pid_t(data.value));
        if (reused && reused->exited)
            new_row(pid_t(data.value)); // the tid of a thread gone: another thread now
    }
    ThreadRow &thread = row(data.tid, name);
    if (event != TD_REAP && event != TD_IDLE && !thread.exited)
        thread.cpu = int(data.cpu);
    switch (event) {
    case TD_CREATE: {
        ThreadRow &born =
            row(pid_t(data.value), name); // a new thread starts with its creator's name
        born.created = true;
        born.state = 'W';
        ++totals_.created;
        break;
    }
    case TD_DEATH:
        switched_off(thread, 1, ns);
        thread.exited = true;
        thread.state = 'X';
        thread.exit_status = int(data.value);
        thread.exited_at_ns = ns;
        ++totals_.exited;
        break;
    case TD_REAP:
        ++totals_.reaped;
        break;
    case TD_SWITCHTO: // an exited thread still runs its last kernel steps
        thread.on_cpu_since_ns = ns;
        if (!thread.exited)
            thread.state = 'R';
        thread.waiting_for_lock = false;
        ++totals_.switches;
        break;
    case TD_SWITCHFROM:
        switched_off(thread, data.value, ns);
        break;
    case TD_SLEEP:
        ++thread.voluntary;
        break;
    case TD_PREEMPT:
        ++thread.involuntary;
        break;
    case TD_READY:
        if (thread.state != 'R')
            thread.state = 'W';
        break;
    case TD_CATCHSIG:
        ++thread.signals;
        ++totals_.signals;
        break;
    case TD_LOCK_TRY:
        ++thread.lock_waits;
        ++totals_.lock_waits;
        thread.waiting_for_lock = true;
        break;
    case TD_TIMEOUT:
        ++thread.timeouts;
        ++totals_.timeouts;
        thread.waiting_for_lock = false;
        break;
    case TD_CONCURRENCY:
        totals_.live = data.value;
        totals_.live_from_kernel = true;
        break;
    default:
        break;
    }
}

size_t ThreadTable::live_rows() const
{
    size_t live = 0;
    for (const auto &thread : rows_)
        live += !thread.exited;
    return live;
}

namespace {

// /proc/PID/task/TID/stat: "tid (comm) S ... processor(39th field) ..."
bool read_task_stat(const std::string &path, char &state, int &cpu)
{
    std::string text = read_text_file(path).value_or("");
    auto close = text.rfind(')'); // the name may hold spaces and parentheses
    if (close == std::string::npos)
        return false;
    std::istringstream fields(text.substr(close + 1));
    std::string field;
    fields >> state;
    for (int number = 4; number <= 39 && fields >> field; ++number)
        if (number == 39)
            cpu = std::atoi(field.c_str());
    return true;
}

} // namespace

void seed_from_proc(ThreadTable &table, pid_t pid)
{
    std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
    std::unique_ptr<DIR, int (*)(DIR *)> dir(opendir(task_dir.c_str()), closedir);
    if (!dir)
        return;
    while (dirent *entry = readdir(dir.get())) {
        pid_t tid = std::atoi(entry->d_name);
        if (tid <= 0)
            continue;
        std::string base = task_dir + "/" + entry->d_name;
        std::string name = read_first_line(base + "/comm");
        char state = '?';
        int cpu = -1;
        if (read_task_stat(base + "/stat", state, cpu))
            table.seed(tid, name, state, cpu);
    }
}

} // namespace posixtrace::cli
