#include "usdt/pending_libraries.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <set>

#include "usdt/library_search.hpp"
#include "util/process_files.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace {
namespace {

// More than any real program loads; a crafted chain of DT_NEEDED stops here.
constexpr size_t kMaxPendingLibraries = 1024;

std::string link_of(const std::string &path)
{
    char target[PATH_MAX];
    ssize_t length = readlink(path.c_str(), target, sizeof target);
    return length > 0 && size_t(length) < sizeof target ? std::string(target, size_t(length))
                                                        : std::string();
}

// The executable's path as the process itself sees it: /proc names it from
// the tracer's root, so a chrooted process's root is taken off the front.
std::string executable_path_in_root(pid_t pid)
{
    std::string proc = "/proc/" + std::to_string(pid);
    std::string executable = link_of(proc + "/exe"), root = link_of(proc + "/root");
    if (root.empty() || root == "/")
        return executable;
    if (executable.compare(0, root.size(), root) == 0 && executable.size() > root.size() &&
        executable[root.size()] == '/')
        return executable.substr(root.size());
    return executable;
}

} // namespace

std::vector<std::string> pending_libraries(pid_t pid)
{
    // Only the executable and its dynamic linker mapped: held before start-up.
    auto mapped = list_mapped_executables(pid);
    if (mapped.empty() || mapped.size() > 2)
        return {};
    UniqueFd executable(
        open(("/proc/" + std::to_string(pid) + "/exe").c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    auto dynamic = executable ? read_elf_dynamic(executable.get()) : std::nullopt;
    if (!dynamic || !dynamic->is_dynamic || dynamic->interpreter.empty())
        return {};
    LibrarySearch search(pid, dynamic->machine);
    // The linker is loaded already: it is needed by its file name (its soname).
    std::set<std::string> names{dynamic->interpreter.substr(dynamic->interpreter.rfind('/') + 1)};
    std::set<std::pair<dev_t, ino_t>> files;
    for (const auto &mapping : mapped)
        if (auto file = open_mapping(pid, mapping.start, mapping.end, mapping.name))
            if (struct stat st; fstat(file->fd.get(), &st) == 0)
                files.insert({st.st_dev, st.st_ino});
    std::vector<LoadingObject> objects{{executable_path_in_root(pid), std::move(*dynamic), -1}};
    auto load = [&](const std::string &name, int needer) {
        if (objects.size() >= kMaxPendingLibraries || !names.insert(name).second)
            return;
        if (auto found = search.find(name, objects, needer))
            if (files.insert({found->device, found->inode}).second)
                objects.push_back(std::move(*found));
    };
    for (const auto &name : search.preloads())
        load(name, -1);
    // Breadth first, as the linker loads them.
    for (size_t i = 0; i < objects.size(); ++i)
        for (size_t n = 0; n < objects[i].dynamic.needed.size(); ++n)
            load(objects[i].dynamic.needed[n], int(i));
    std::vector<std::string> paths;
    for (size_t i = 1; i < objects.size(); ++i)
        paths.push_back(objects[i].path);
    return paths;
}

} // namespace posixtrace
