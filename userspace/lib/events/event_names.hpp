#pragma once
#include <trace.h>

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace posixtrace {

// Names of the event types the implementation defines (system, thread,
// unnamed user event); nullopt for any other id.
std::optional<std::string_view> builtin_event_name(trace_event_id_t id);
// The builtin ids in increasing order.
const std::vector<trace_event_id_t> &builtin_event_ids();

// The user event names of this process (posix_trace_eventid_open): ids are
// given in order of registration and never change. A child gets a copy at
// fork, unless a stream traces this process with POSIX_TRACE_INHERITED: its
// children then share the table, so every process of the stream maps a name
// to the same id, as POSIX asks with the Trace Inherit option.
// Held by a stream tracing this process with POSIX_TRACE_INHERITED: the
// children forked meanwhile share this process's user event names.
class SharedUserEventNames {
public:
    SharedUserEventNames();
    ~SharedUserEventNames();
    SharedUserEventNames(const SharedUserEventNames &) = delete;
    SharedUserEventNames &operator=(const SharedUserEventNames &) = delete;
};

// What a stream of this process asks of its own names.
class OwnUserEventNames {
public:
    virtual ~OwnUserEventNames() = default;
    // 0 and the id; ENAMETOOLONG; the unnamed user event once full.
    virtual int open(std::string_view name, trace_event_id_t &id) = 0;
    virtual std::optional<std::string> name_of(trace_event_id_t id) const = 0;
    virtual std::vector<trace_event_id_t> ids() const = 0;
};

class UserEventRegistry final : public OwnUserEventNames {
public:
    static UserEventRegistry &instance();

    int open(std::string_view name, trace_event_id_t &id) override;
    std::optional<std::string> name_of(trace_event_id_t id) const override;
    std::vector<trace_event_id_t> ids() const override;

private:
    std::optional<trace_event_id_t> cached(const std::string &name) const;

    mutable std::mutex cache_mutex_;
    // Names seen in the table by this process: entries never change, so a
    // cached id stays right after a fork.
    mutable std::unordered_map<std::string, trace_event_id_t> cache_;
};

} // namespace posixtrace
