#include "events/remote_user_events.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <posix_trace/events.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>

#include "events/user_event_table.hpp"
#include "util/elf_file.hpp"
#include "util/elf_symbols.hpp"
#include "util/process_files.hpp"
#include "util/text_file.hpp"

namespace posixtrace {

bool symbol_and_first_load(const std::string &path, const char *symbol_name, uint64_t &value,
                           uint64_t &first_load)
{
    ElfFile elf(path);
    if (!elf.valid())
        return false;
    size_t segments = 0;
    if (elf_getphdrnum(elf.get(), &segments) != 0)
        return false;
    bool have_load = false;
    for (size_t i = 0; i < segments && !have_load; ++i) {
        GElf_Phdr header;
        if (gelf_getphdr(elf.get(), int(i), &header) && header.p_type == PT_LOAD) {
            first_load = header.p_vaddr - header.p_offset; // maps at file offset 0
            have_load = true;
        }
    }
    auto symbol = have_load ? find_symbol(elf, symbol_name) : std::nullopt;
    if (!symbol)
        return false;
    value = symbol->st_value;
    return true;
}

namespace {

struct Mapping {
    uint64_t start, end;
};

// Where `object` is mapped at file offset 0 in `pid`.
std::optional<Mapping> mapping_base(pid_t pid, const std::string &object)
{
    std::optional<Mapping> first;
    for_each_line("/proc/" + std::to_string(pid) + "/maps", [&](std::string_view line) {
        auto slash = line.find('/');
        if (slash == std::string::npos || line.substr(slash) != object)
            return true;
        unsigned long start = 0, end = 0, offset = 0;
        char perms[8];
        if (std::sscanf(std::string(line).c_str(), "%lx-%lx %7s %lx", &start, &end, perms,
                        &offset) == 4 &&
            offset == 0)
            first = Mapping{start, end};
        return !first;
    });
    return first;
}

bool read_remote(pid_t pid, uint64_t address, void *into, size_t size)
{
    iovec local{into, size};
    iovec remote{reinterpret_cast<void *>(address), size};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == ssize_t(size);
}

} // namespace

RemoteUserEventNames::RemoteUserEventNames(pid_t pid, std::string object)
    : pid_(pid), object_(std::move(object))
{
}

bool RemoteUserEventNames::locate()
{
    if (address_ || locate_failed_)
        return address_ != 0;
    uint64_t value = 0, first_load = 0;
    auto base = mapping_base(pid_, object_);
    if (!base)
        return false; // not mapped yet: the process is held before its dynamic linker ran
    // The file read is the one mapped there (process_files.hpp); it is not
    // kept open: a stream may follow thousands of processes.
    auto file = open_mapping(pid_, base->start, base->end, object_);
    if (!file || !symbol_and_first_load(file->path(), kUserEventTableSymbol, value, first_load)) {
        locate_failed_ = true;
        return false;
    }
    address_ = base->start - first_load + value;
    return true;
}

void read_user_event_names(const MemoryReader &read, uint64_t address,
                           std::vector<std::string> &names)
{
    uint32_t header[4]; // magic, version, capacity, count
    if (!read(address, header, sizeof header) || header[0] != kUserEventTableMagic ||
        header[1] != kUserEventTableVersion)
        return;
    uint32_t count = std::min<uint32_t>(header[3], TRACE_USER_EVENT_MAX);
    for (uint32_t index = uint32_t(names.size()); index < count; ++index) {
        char name[TRACE_EVENT_NAME_MAX];
        if (!read(address + offsetof(pt_user_event_table, names) +
                      uint64_t(index) * TRACE_EVENT_NAME_MAX,
                  name, sizeof name))
            return;
        name[sizeof name - 1] = '\0';
        names.emplace_back(name);
    }
}

void RemoteUserEventNames::refresh()
{
    if (!locate())
        return;
    read_user_event_names([this](uint64_t address, void *into,
                                 size_t size) { return read_remote(pid_, address, into, size); },
                          address_, names_);
}

std::optional<std::string> RemoteUserEventNames::name_of(trace_event_id_t id)
{
    if (id < POSIX_TRACE_USER_EVENT_FIRST)
        return std::nullopt;
    size_t index = id - POSIX_TRACE_USER_EVENT_FIRST;
    if (index >= names_.size())
        refresh();
    if (index >= names_.size())
        return std::nullopt;
    return names_[index];
}

std::vector<trace_event_id_t> RemoteUserEventNames::ids()
{
    refresh();
    std::vector<trace_event_id_t> all(names_.size());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = POSIX_TRACE_USER_EVENT_FIRST + trace_event_id_t(i);
    return all;
}

} // namespace posixtrace
