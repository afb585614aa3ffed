// The user event name table: published at an exported symbol for tracers
// (remote_user_events.cpp reads it by pid), shared with forked children, and
// announced to the streams tracing the process by a USDT probe at each new
// name, so names travel in-band with the events (docs/architecture.md,
// "User event names").
#include <pthread.h>
#include <sys/mman.h>
#include <sys/sdt.h>

#include <posix_trace/events.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "events/event_names.hpp"
#include "events/user_event_table.hpp"
#include "util/immortal.hpp"

namespace {

// Page-aligned and a whole number of pages, so that it can be remapped
// shared in place: tracers find the table at the symbol's address.
struct alignas(4096) SharedUserEventTable {
    pt_user_event_table table;
    pthread_mutex_t lock; // process-shared and robust: a child may die holding it
};

} // namespace

extern "C" {
__attribute__((visibility("default"))) SharedUserEventTable posix_trace_user_event_table;
}

namespace posixtrace {
namespace {

// How many streams trace this process with POSIX_TRACE_INHERITED: while one
// does, the children it forks share its numbering. Otherwise a child numbers
// its own names from a copy (POSIX: a per-process table), and a stream
// tracing both tells their ids apart by name.
std::atomic<int> inheriting_streams{0};

void init_table_lock()
{
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&posix_trace_user_event_table.lock, &attributes);
    pthread_mutexattr_destroy(&attributes);
}

// The child's copy of the table, private: what was published at the fork,
// moved over the shared mapping in one step. If that fails the child keeps
// sharing: ids stay unique, which a stream reads by name anyway.
void keep_table_private_in_child()
{
    if (inheriting_streams.load() > 0)
        return;
    constexpr size_t size = sizeof posix_trace_user_event_table;
    void *fresh = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED)
        return;
    const pt_user_event_table &shared = posix_trace_user_event_table.table;
    uint32_t count = __atomic_load_n(&shared.count, __ATOMIC_ACQUIRE);
    std::memcpy(fresh, &shared,
                offsetof(pt_user_event_table, names) + size_t(count) * TRACE_EVENT_NAME_MAX);
    static_cast<pt_user_event_table *>(fresh)->count = count;
    if (mremap(fresh, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, &posix_trace_user_event_table) ==
        MAP_FAILED) {
        munmap(fresh, size);
        return;
    }
    init_table_lock();
}

// Runs before any code of a program can register a name. If the remap
// fails, the table stays private: each process then numbers its own names.
__attribute__((constructor)) void share_user_event_table()
{
    void *at = &posix_trace_user_event_table;
    mmap(at, sizeof posix_trace_user_event_table, PROT_READ | PROT_WRITE,
         MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    init_table_lock();
    pthread_atfork(nullptr, nullptr, keep_table_private_in_child);
    pt_user_event_table &table = posix_trace_user_event_table.table;
    table.version = kUserEventTableVersion;
    table.capacity = TRACE_USER_EVENT_MAX;
    __atomic_store_n(&table.magic, kUserEventTableMagic, __ATOMIC_RELEASE);
}

class TableLock {
public:
    TableLock()
    {
        if (pthread_mutex_lock(&posix_trace_user_event_table.lock) == EOWNERDEAD)
            pthread_mutex_consistent(
                &posix_trace_user_event_table.lock); // the table is append-only
    }
    ~TableLock() { pthread_mutex_unlock(&posix_trace_user_event_table.lock); }
    TableLock(const TableLock &) = delete;
    TableLock &operator=(const TableLock &) = delete;
};

uint32_t published_count()
{
    return __atomic_load_n(&posix_trace_user_event_table.table.count, __ATOMIC_ACQUIRE);
}

} // namespace

pt_user_event_table &local_user_event_table()
{
    return posix_trace_user_event_table.table;
}

SharedUserEventNames::SharedUserEventNames()
{
    ++inheriting_streams;
}
SharedUserEventNames::~SharedUserEventNames()
{
    --inheriting_streams;
}

UserEventRegistry &UserEventRegistry::instance()
{
    static Immortal<UserEventRegistry> registry; // read by the streams shut down at exit
    return registry.get();
}

std::optional<trace_event_id_t> UserEventRegistry::cached(const std::string &name) const
{
    std::lock_guard lock(cache_mutex_);
    auto found = cache_.find(name);
    if (found == cache_.end())
        return std::nullopt;
    return found->second;
}

int UserEventRegistry::open(std::string_view name, trace_event_id_t &id)
{
    if (name.size() >= TRACE_EVENT_NAME_MAX)
        return ENAMETOOLONG;
    std::string key(name);
    if (auto known = cached(key)) {
        id = *known;
        return 0;
    }
    pt_user_event_table &table = local_user_event_table();
    TableLock lock;
    uint32_t count = table.count;
    uint32_t index = 0;
    while (index < count && std::strncmp(table.names[index], key.c_str(), TRACE_EVENT_NAME_MAX))
        ++index;
    if (index == count) {
        if (count >= TRACE_USER_EVENT_MAX) {
            id = POSIX_TRACE_UNNAMED_USEREVENT;
            return 0;
        }
        // The name first, then the count that covers it (readers by pid),
        // and the probe for the streams tracing this process.
        std::memcpy(table.names[index], key.c_str(), key.size() + 1);
        trace_event_id_t new_id = POSIX_TRACE_USER_EVENT_FIRST + index;
        const char *stored = table.names[index];
        STAP_PROBE2(posix_trace, eventid_open, new_id, stored);
        __atomic_store_n(&table.count, count + 1, __ATOMIC_RELEASE);
    }
    id = POSIX_TRACE_USER_EVENT_FIRST + index;
    std::lock_guard cache_lock(cache_mutex_);
    cache_.emplace(std::move(key), id);
    return 0;
}

std::optional<std::string> UserEventRegistry::name_of(trace_event_id_t id) const
{
    if (id < POSIX_TRACE_USER_EVENT_FIRST || id - POSIX_TRACE_USER_EVENT_FIRST >= published_count())
        return std::nullopt;
    const char *name = local_user_event_table().names[id - POSIX_TRACE_USER_EVENT_FIRST];
    return std::string(name, strnlen(name, TRACE_EVENT_NAME_MAX - 1));
}

std::vector<trace_event_id_t> UserEventRegistry::ids() const
{
    std::vector<trace_event_id_t> all(published_count());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = POSIX_TRACE_USER_EVENT_FIRST + trace_event_id_t(i);
    return all;
}

} // namespace posixtrace
