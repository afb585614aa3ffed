#include "threads/thread_agent.hpp"

#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cerrno>
#include <string>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL // Linux 6.9's uapi; Debian 12's headers predate it
#endif

namespace posixtrace {
namespace {

// What tells the thread holding `tid` now from the earlier and later holders
// of that tid: the inode number of its pidfd (pidfs, Linux 6.9+), which the
// kernel's programs read as task->thread_pid->ino. 0 where the kernel has
// no thread pidfds or no pidfs.
uint64_t thread_identity(pid_t tid)
{
    UniqueFd pidfd(int(syscall(SYS_pidfd_open, tid, PIDFD_THREAD)));
    struct stat st;
    if (!pidfd || fstat(pidfd.get(), &st) != 0)
        return 0;
    return uint64_t(st.st_ino);
}

// Bit n-1 of the kernel masks for TD event n; thread_db's sets have words of
// 32 bits, the first holding events 1..32.
uint32_t kernel_mask_of(const td_thr_events_t &events)
{
    uint32_t all = (1u << TD_MAX_EVENT_NUM) - 1;
    return events.event_bits[0] & all;
}

} // namespace

td_err_e ThreadAgent::attach(std::shared_ptr<Stream> stream, pid_t pid, bool owns_stream,
                             std::unique_ptr<ThreadAgent> &out)
{
    auto agent = std::make_unique<ThreadAgent>(std::move(stream), pid, owns_stream);
    td_err_e result = agent->with_kernel([pid](KernelProgram &kernel) {
        if (!kernel.traces_process(pid))
            return TD_BADPH;
        // Threads start with reporting disabled and empty masks.
        kernel.remove_td_threads_of(pid);
        return kernel.set_td_process(pid, pt_td_process{}) ? TD_DBERR : TD_OK;
    });
    if (result == TD_OK && agent->stream_->probes().set_thread_agent(pid, true) != 0) {
        agent->with_kernel([pid](KernelProgram &kernel) {
            kernel.remove_td_process(pid);
            return TD_OK;
        });
        result = TD_DBERR;
    }
    if (result != TD_OK) {
        agent->owns_stream_ = false; // the caller still owns it on failure
        agent->stream_.reset();
        return result;
    }
    out = std::move(agent);
    return TD_OK;
}

ThreadAgent::~ThreadAgent()
{
    if (!stream_)
        return;
    stream_->probes().set_thread_agent(pid_, false);
    with_kernel([this](KernelProgram &kernel) {
        kernel.remove_td_process(pid_); // every thread reports again
        kernel.remove_td_threads_of(pid_);
        return TD_OK;
    });
    if (owns_stream_)
        stream_->shutdown();
}

td_err_e ThreadAgent::with_kernel(const std::function<td_err_e(KernelProgram &)> &change)
{
    td_err_e result = TD_BADPH;
    if (!stream_ || !stream_->probes().control_thread_events(
                        [&](KernelProgram &kernel) { result = change(kernel); }))
        return TD_BADPH;
    return result;
}

td_err_e ThreadAgent::check_thread(pid_t tid) const
{
    if (tid <= 0)
        return TD_NOLWP;
    struct stat st;
    std::string task = "/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid);
    return stat(task.c_str(), &st) == 0 ? TD_OK : TD_NOLWP;
}

// The identity is read before the check that the tid is the process's: if
// the thread ends in between, the entry names a gone thread and no later
// holder of the tid takes its settings.
td_err_e ThreadAgent::update_thread(pid_t tid, const std::function<void(pt_td_thread &)> &change)
{
    uint64_t identity = thread_identity(tid);
    if (check_thread(tid) != TD_OK)
        return TD_BADTH;
    std::lock_guard lock(mutex_);
    return with_kernel([&](KernelProgram &kernel) {
        auto current = kernel.td_thread(tid);
        // An entry left by an earlier thread of this tid is not this one's.
        pt_td_thread thread = current && current->identity == identity ? *current : pt_td_thread{};
        thread.identity = identity;
        change(thread);
        int err = kernel.set_td_thread(tid, thread);
        return err == 0 ? TD_OK : err == E2BIG ? TD_NOCAPAB : TD_DBERR;
    });
}

td_err_e ThreadAgent::enable(pid_t tid, bool on)
{
    return update_thread(tid, [on](pt_td_thread &thread) { thread.enabled = on; });
}

td_err_e ThreadAgent::change_thread_mask(pid_t tid, const td_thr_events_t &events, bool add)
{
    uint32_t bits = kernel_mask_of(events);
    return update_thread(tid, [bits, add](pt_td_thread &thread) {
        thread.mask = add ? thread.mask | bits : thread.mask & ~bits;
    });
}

td_err_e ThreadAgent::change_global_mask(const td_thr_events_t &events, bool add)
{
    uint32_t bits = kernel_mask_of(events);
    std::lock_guard lock(mutex_);
    return with_kernel([&](KernelProgram &kernel) {
        auto process = kernel.td_process(pid_);
        if (!process)
            return TD_BADPH; // the process ended: its entry went with it
        process->global_mask = add ? process->global_mask | bits : process->global_mask & ~bits;
        return kernel.set_td_process(pid_, *process) ? TD_DBERR : TD_OK;
    });
}

const td_thrhandle_t *ThreadAgent::handle_for(pid_t tid)
{
    auto &handle = handles_[tid];
    if (!handle)
        handle = std::make_unique<td_thrhandle_t>(td_thrhandle_t{self_, uintptr_t(tid)});
    return handle.get();
}

void ThreadAgent::fill_message(pid_t tid, const pt_td_message &from, td_event_msg_t &to)
{
    to.event = td_event_e(from.event);
    to.th_p = handle_for(tid);
    to.msg.data = uintptr_t(from.data);
}

td_err_e ThreadAgent::take_message(pid_t tid, td_event_msg_t &message)
{
    std::lock_guard lock(mutex_);
    std::optional<pt_td_message> taken;
    td_err_e result = with_kernel([&](KernelProgram &kernel) {
        taken = kernel.take_td_message(tid);
        return TD_OK;
    });
    if (result != TD_OK)
        return result;
    if (!taken)
        return TD_NOMSG;
    fill_message(tid, *taken, message);
    return TD_OK;
}

td_err_e ThreadAgent::take_any_message(td_event_msg_t &message)
{
    std::lock_guard lock(mutex_);
    std::optional<std::pair<pid_t, pt_td_message>> taken;
    td_err_e result = with_kernel([&](KernelProgram &kernel) {
        taken = kernel.take_any_td_message(pid_);
        return TD_OK;
    });
    if (result != TD_OK)
        return result;
    if (!taken)
        return TD_NOMSG;
    fill_message(taken->first, taken->second, message);
    return TD_OK;
}

} // namespace posixtrace
