// C ABI of <posix_trace/thread_db.h>: handle checks and thread_db's error
// codes; ThreadAgent does the work.
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <signal.h>

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>

#include "stream/stream_table.hpp"
#include "threads/td_notify.hpp"
#include "threads/thread_agent.hpp"
#include "util/export.hpp"

using namespace posixtrace;

struct td_thragent {
    std::shared_ptr<ThreadAgent> agent;
};

namespace {

// The live agents: a released or forged pointer is answered TD_BADTA and
// never dereferenced.
class AgentRegistry {
public:
    static AgentRegistry &instance()
    {
        static AgentRegistry registry;
        return registry;
    }
    td_thragent_t *add(std::unique_ptr<ThreadAgent> agent)
    {
        auto entry = std::make_unique<td_thragent_t>();
        td_thragent_t *handle = entry.get();
        agent->set_public_handle(handle);
        entry->agent = std::move(agent);
        std::lock_guard lock(mutex_);
        agents_.emplace(handle, std::move(entry));
        return handle;
    }
    std::shared_ptr<ThreadAgent> find(const td_thragent_t *handle) const
    {
        std::lock_guard lock(mutex_);
        auto found = agents_.find(handle);
        return found == agents_.end() ? nullptr : found->second->agent;
    }
    bool remove(const td_thragent_t *handle)
    {
        std::unique_ptr<td_thragent_t> removed;
        {
            std::lock_guard lock(mutex_);
            auto found = agents_.find(handle);
            if (found == agents_.end())
                return false;
            removed = std::move(found->second);
            agents_.erase(found);
        }
        return true; // the agent goes when its last user lets go
    }

private:
    mutable std::mutex mutex_;
    std::map<const td_thragent_t *, std::unique_ptr<td_thragent_t>> agents_;
};

std::shared_ptr<ThreadAgent> agent_of(const td_thragent_t *ta)
{
    return ta ? AgentRegistry::instance().find(ta) : nullptr;
}

// The agent of a thread handle, and the thread; TD_BADTH when either is bad.
td_err_e thread_of(const td_thrhandle_t *th, std::shared_ptr<ThreadAgent> &agent, pid_t &tid)
{
    if (!th || !(agent = agent_of(th->th_ta_p)))
        return TD_BADTH;
    tid = pid_t(th->th_unique);
    return agent->check_thread(tid) == TD_OK ? TD_OK : TD_BADTH;
}

td_err_e register_agent(std::shared_ptr<Stream> stream, pid_t pid, bool owns_stream,
                        td_thragent_t **ta)
{
    std::unique_ptr<ThreadAgent> agent;
    if (td_err_e err = ThreadAgent::attach(std::move(stream), pid, owns_stream, agent))
        return err;
    *ta = AgentRegistry::instance().add(std::move(agent));
    return TD_OK;
}

// A stream of the agent's own: only thread events pass its filter, and its
// buffer, which nobody reads, overwrites itself.
std::shared_ptr<Stream> private_thread_event_stream(pid_t pid)
{
    Attributes attributes = Attributes::defaults();
    attributes.stream_size = 64 * 1024;
    attributes.stream_full_policy = POSIX_TRACE_LOOP;
    std::shared_ptr<Stream> stream;
    if (Stream::create(pid, attributes, stream) != 0)
        return nullptr;
    trace_event_set_t only_thread_events;
    posix_trace_eventset_fill(&only_thread_events, POSIX_TRACE_ALL_EVENTS);
    for (unsigned i = 0; i < POSIX_TRACE_TD_EVENT_COUNT; ++i)
        posix_trace_eventset_del(POSIX_TRACE_TD_EVENT_FIRST + i, &only_thread_events);
    if (stream->set_filter(only_thread_events, POSIX_TRACE_SET_EVENTSET) != 0 || stream->start() != 0) {
        stream->shutdown();
        return nullptr;
    }
    return stream;
}

} // namespace

POSIXTRACE_EXPORT td_err_e td_ta_new_from_stream(trace_id_t trid, pid_t pid, td_thragent_t **ta)
{
    if (!ta)
        return TD_ERR;
    auto stream = StreamTable::instance().find(trid);
    if (!stream || pid <= 0)
        return TD_BADPH;
    return register_agent(std::move(stream), pid, false, ta);
}

POSIXTRACE_EXPORT td_err_e td_ta_new_pid(pid_t pid, td_thragent_t **ta)
{
    if (!ta)
        return TD_ERR;
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return TD_BADPH;
    auto stream = private_thread_event_stream(pid);
    if (!stream)
        return TD_BADPH;
    td_err_e err = register_agent(stream, pid, true, ta);
    if (err != TD_OK)
        stream->shutdown();
    return err;
}

POSIXTRACE_EXPORT td_err_e td_ta_map_lwp2thr(const td_thragent_t *ta, pid_t tid, td_thrhandle_t *th)
{
    auto agent = agent_of(ta);
    if (!agent)
        return TD_BADTA;
    if (!th)
        return TD_ERR;
    if (agent->check_thread(tid) != TD_OK)
        return TD_NOLWP;
    th->th_ta_p = const_cast<td_thragent_t *>(ta);
    th->th_unique = uintptr_t(tid);
    return TD_OK;
}

POSIXTRACE_EXPORT td_err_e td_ta_delete(td_thragent_t *ta)
{
    return ta && AgentRegistry::instance().remove(ta) ? TD_OK : TD_BADTA;
}

POSIXTRACE_EXPORT td_err_e td_ta_event_addr(const td_thragent_t *ta, td_event_e event,
                                            td_notify_t *notify)
{
    if (!agent_of(ta))
        return TD_BADTA;
    uintptr_t address = td_report_address(event);
    if (!notify || !address)
        return TD_ERR;
    notify->type = NOTIFY_BPT;
    notify->u.bptaddr = address;
    return TD_OK;
}

POSIXTRACE_EXPORT td_err_e td_thr_event_enable(const td_thrhandle_t *th, int on_off)
{
    std::shared_ptr<ThreadAgent> agent;
    pid_t tid;
    if (td_err_e err = thread_of(th, agent, tid))
        return err;
    return agent->enable(tid, on_off != 0);
}

static td_err_e change_thread_events(const td_thrhandle_t *th, td_thr_events_t *events, bool add)
{
    std::shared_ptr<ThreadAgent> agent;
    pid_t tid;
    if (td_err_e err = thread_of(th, agent, tid))
        return err;
    if (!events)
        return TD_ERR;
    return agent->change_thread_mask(tid, *events, add);
}

static td_err_e change_global_events(const td_thragent_t *ta, td_thr_events_t *events, bool add)
{
    auto agent = agent_of(ta);
    if (!agent)
        return TD_BADTA;
    if (!events)
        return TD_ERR;
    return agent->change_global_mask(*events, add);
}

POSIXTRACE_EXPORT td_err_e td_thr_set_event(const td_thrhandle_t *th, td_thr_events_t *events)
{
    return change_thread_events(th, events, true);
}

POSIXTRACE_EXPORT td_err_e td_thr_clear_event(const td_thrhandle_t *th, td_thr_events_t *events)
{
    return change_thread_events(th, events, false);
}

POSIXTRACE_EXPORT td_err_e td_ta_set_event(const td_thragent_t *ta, td_thr_events_t *events)
{
    return change_global_events(ta, events, true);
}

POSIXTRACE_EXPORT td_err_e td_ta_clear_event(const td_thragent_t *ta, td_thr_events_t *events)
{
    return change_global_events(ta, events, false);
}

POSIXTRACE_EXPORT td_err_e td_thr_event_getmsg(const td_thrhandle_t *th, td_event_msg_t *msg)
{
    // The handle may name a thread that has ended: its last message is still
    // readable, so only the agent is checked here.
    std::shared_ptr<ThreadAgent> agent;
    if (!th || !(agent = agent_of(th->th_ta_p)))
        return TD_BADTH;
    if (!msg)
        return TD_ERR;
    return agent->take_message(pid_t(th->th_unique), *msg);
}

POSIXTRACE_EXPORT td_err_e td_ta_event_getmsg(const td_thragent_t *ta, td_event_msg_t *msg)
{
    auto agent = agent_of(ta);
    if (!agent)
        return TD_BADTA;
    if (!msg)
        return TD_ERR;
    return agent->take_any_message(*msg);
}
