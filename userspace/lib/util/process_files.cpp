#include "util/process_files.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>

#include "util/text_file.hpp"

namespace posixtrace {
namespace {

std::string proc_of(pid_t pid)
{
    return "/proc/" + std::to_string(pid);
}

// Only a regular file is read: a FIFO or a device the process put in its
// place could block the tracer or never end (hence O_NONBLOCK to open).
UniqueFd regular_only(UniqueFd fd)
{
    struct stat st;
    if (fd && (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)))
        fd.reset();
    return fd;
}

} // namespace

std::optional<ProcessFile> open_in_root(pid_t pid, const std::string &path)
{
    UniqueFd root(open((proc_of(pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root || path.empty())
        return std::nullopt;
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    UniqueFd file = regular_only(
        UniqueFd(int(syscall(SYS_openat2, root.get(), path.c_str(), &how, sizeof how))));
    if (!file)
        return std::nullopt;
    return ProcessFile{std::move(file), path};
}

std::optional<ProcessFile> open_mapping(pid_t pid, uint64_t start, uint64_t end,
                                        const std::string &name)
{
    // Named by the range without maps' zero padding: 400000-41f000.
    char range[40];
    std::snprintf(range, sizeof range, "%lx-%lx", (unsigned long)start, (unsigned long)end);
    int fd = open((proc_of(pid) + "/map_files/" + range).c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    int open_error = errno;
    if (UniqueFd file = regular_only(UniqueFd(fd)))
        return ProcessFile{std::move(file), name};
    if (fd < 0 && (open_error == EPERM || open_error == EACCES))
        return open_in_root(pid, name);
    return std::nullopt;
}

std::vector<MappedExecutable> list_mapped_executables(pid_t pid, bool *cut_short)
{
    std::vector<MappedExecutable> mappings;
    std::set<std::string> seen;
    bool more = false;
    for_each_line(proc_of(pid) + "/maps", [&](std::string_view line) {
        auto slash = line.find('/');
        auto range_end = line.find(' ');
        if (slash == std::string::npos || range_end == std::string::npos ||
            range_end + 3 >= line.size() || line[range_end + 3] != 'x')
            return true;
        std::string name(line.substr(slash));
        if (name.ends_with(" (deleted)") || seen.contains(name))
            return true;
        unsigned long start = 0, end = 0;
        if (std::sscanf(std::string(line).c_str(), "%lx-%lx", &start, &end) != 2)
            return true;
        if (mappings.size() == kMaxMappedExecutables) {
            more = true;
            return false;
        }
        seen.insert(name);
        mappings.push_back({start, end, std::move(name)});
        return true;
    });
    if (cut_short)
        *cut_short = more;
    return mappings;
}

std::vector<ProcessFile> open_mapped_executables(pid_t pid)
{
    std::vector<ProcessFile> files;
    for (const auto &mapping : list_mapped_executables(pid))
        if (auto file = open_mapping(pid, mapping.start, mapping.end, mapping.name))
            files.push_back(std::move(*file));
    return files;
}

} // namespace posixtrace
