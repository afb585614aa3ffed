#pragma once
#include <posix_trace/thread_db.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>

#include "stream/stream.hpp"

namespace posixtrace {

// The controlling process's agent for one traced process: thread_db's
// per-thread reporting flags and masks, the global mask and the one-slot
// message buffers, all kept in the kernel half of a stream (so an event not
// reported costs nothing), and the thread handles messages point to.
class ThreadAgent {
public:
    // From a stream that traces `pid`; with `owns_stream` the agent shuts it
    // down when released.
    static td_err_e attach(std::shared_ptr<Stream> stream, pid_t pid, bool owns_stream,
                           std::unique_ptr<ThreadAgent> &out);
    ThreadAgent(std::shared_ptr<Stream> stream, pid_t pid, bool owns_stream)
        : stream_(std::move(stream)), pid_(pid), owns_stream_(owns_stream)
    {
    }
    ~ThreadAgent();
    ThreadAgent(const ThreadAgent &) = delete;
    ThreadAgent &operator=(const ThreadAgent &) = delete;

    pid_t pid() const { return pid_; }
    // The C handle of this agent, for the thread handles it gives out.
    void set_public_handle(td_thragent_t *self) { self_ = self; }
    // TD_OK, or TD_NOLWP when `tid` is no thread of the process.
    td_err_e check_thread(pid_t tid) const;

    td_err_e enable(pid_t tid, bool on);
    td_err_e change_thread_mask(pid_t tid, const td_thr_events_t &events, bool add);
    td_err_e change_global_mask(const td_thr_events_t &events, bool add);
    td_err_e take_message(pid_t tid, td_event_msg_t &message);
    td_err_e take_any_message(td_event_msg_t &message);

private:
    // Runs `change` on the kernel half; TD_BADPH once the stream is gone.
    td_err_e with_kernel(const std::function<td_err_e(KernelProgram &)> &change);
    td_err_e update_thread(pid_t tid, const std::function<void(pt_td_thread &)> &change);
    const td_thrhandle_t *handle_for(pid_t tid);
    void fill_message(pid_t tid, const pt_td_message &from, td_event_msg_t &to);

    std::shared_ptr<Stream> stream_;
    pid_t pid_;
    bool owns_stream_;
    td_thragent_t *self_ = nullptr;
    std::mutex mutex_; // one read-modify-write of a thread's flags at a time
    std::map<pid_t, std::unique_ptr<td_thrhandle_t>> handles_; // messages point here
};

} // namespace posixtrace
