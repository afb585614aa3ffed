// KernelProgram: the maps of the thread events of <posix_trace/thread_db.h>
// (a process's reporting rule, a thread's mask, the messages waiting for an
// agent), each a BPF hash map the programs read.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>

#include <cstdlib>
#include <string>

#include "kernel/kernel_program.hpp"
#include "posixtrace.h"
#include "posixtrace.skel.h"

namespace posixtrace {
namespace {

// Each of these maps is keyed by a tgid or a tid. False, errno set, when
// the map refused the entry.
template <class Value> bool store_entry(const bpf_map *map, pid_t id, const Value &value)
{
    __u32 key = uint32_t(id);
    return bpf_map_update_elem(bpf_map__fd(map), &key, &value, BPF_ANY) == 0;
}

template <class Value> std::optional<Value> entry_of(const bpf_map *map, pid_t id)
{
    __u32 key = uint32_t(id);
    Value value;
    if (bpf_map_lookup_elem(bpf_map__fd(map), &key, &value))
        return std::nullopt;
    return value;
}

} // namespace

int KernelProgram::set_td_process(pid_t tgid, const pt_td_process &process)
{
    return store_entry(skeleton_->maps.td_processes, tgid, process) ? 0 : errno_from(-errno);
}

void KernelProgram::remove_td_process(pid_t tgid)
{
    __u32 key = tgid;
    bpf_map_delete_elem(bpf_map__fd(skeleton_->maps.td_processes), &key);
}

std::optional<pt_td_process> KernelProgram::td_process(pid_t tgid) const
{
    return entry_of<pt_td_process>(skeleton_->maps.td_processes, tgid);
}

int KernelProgram::set_td_thread(pid_t tid, const pt_td_thread &thread)
{
    return store_entry(skeleton_->maps.td_threads, tid, thread) ? 0 : errno_from(-errno);
}

std::optional<pt_td_thread> KernelProgram::td_thread(pid_t tid) const
{
    return entry_of<pt_td_thread>(skeleton_->maps.td_threads, tid);
}

void KernelProgram::remove_td_threads_of(pid_t tgid)
{
    // The thread table has no tgid: ask /proc for the process's threads.
    std::string tasks = "/proc/" + std::to_string(tgid) + "/task";
    if (DIR *dir = opendir(tasks.c_str())) {
        while (dirent *entry = readdir(dir)) {
            __u32 key = uint32_t(std::strtoul(entry->d_name, nullptr, 10));
            if (key)
                bpf_map_delete_elem(bpf_map__fd(skeleton_->maps.td_threads), &key);
        }
        closedir(dir);
    }
}

std::optional<pt_td_message> KernelProgram::take_td_message(pid_t tid)
{
    __u32 key = tid;
    pt_td_message message;
    if (bpf_map_lookup_and_delete_elem(bpf_map__fd(skeleton_->maps.td_messages), &key, &message))
        return std::nullopt;
    return message;
}

std::optional<std::pair<pid_t, pt_td_message>> KernelProgram::take_any_td_message(pid_t tgid)
{
    int fd = bpf_map__fd(skeleton_->maps.td_messages);
    __u32 key = 0, next;
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? nullptr : &key, &next) == 0) {
        first = false;
        key = next;
        pt_td_message message;
        if (bpf_map_lookup_elem(fd, &key, &message) != 0 || message.tgid != uint32_t(tgid))
            continue;
        // Another reader may take it first: then look further.
        if (bpf_map_lookup_and_delete_elem(fd, &key, &message) == 0 &&
            message.tgid == uint32_t(tgid))
            return std::pair{pid_t(key), message};
    }
    return std::nullopt;
}

} // namespace posixtrace
