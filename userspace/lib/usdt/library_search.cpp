#include "usdt/library_search.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "util/process_files.hpp"
#include "util/text_file.hpp"

namespace posixtrace {
namespace {

// A cache of this size holds ~500,000 entries; real ones are ~100 KB.
constexpr size_t kMaxCacheBytes = 16 << 20;
// Past this, the environment is not read further (its LD_ variables may then
// go unseen: the libraries they bring are found when the linker maps them).
constexpr size_t kMaxEnvironmentBytes = 4 << 20;

constexpr char kCacheMagic[] = "glibc-ld.so.cache1.1";
constexpr char kOldCacheMagic[] = "ld.so-1.7.0";
constexpr size_t kCacheHeaderBytes = 48; // magic, version, counts, flags, extension offset
constexpr size_t kCacheEntryBytes = 24;  // flags, key, value, osversion, hwcap
constexpr size_t kOldEntryBytes = 12;
// Real caches hold a few thousand entries of paths of PATH_MAX at most.
constexpr uint32_t kMaxCacheEntries = 65536;
constexpr size_t kMaxCacheString = 4096;
// Files and directories a held process's search may look at: a crafted executable or
// environment (a thousand DT_NEEDED names, tens of thousands of directories)
// could otherwise make the tracer try billions.
constexpr size_t kMaxFilesTried = 8192;

// The flags ld.so.cache gives the libraries this machine type's linker takes.
int32_t cache_flags_for(uint16_t machine)
{
    constexpr int32_t kElfLibc6 = 0x0003, kX8664Lib64 = 0x0300, kAarch64Lib64 = 0x0a00;
    switch (machine) {
    case EM_X86_64:
        return kElfLibc6 | kX8664Lib64;
    case EM_AARCH64:
        return kElfLibc6 | kAarch64Lib64;
    }
    return -1;
}

// The directories the linker searches last, as Debian's builds it.
std::vector<std::string> default_directories(uint16_t machine)
{
    std::string triplet = machine == EM_AARCH64 ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
    return {"/lib/" + triplet, "/usr/lib/" + triplet, "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
}

// The first `limit` bytes of `/proc/PID/NAME`; "" when unreadable.
std::string read_proc_file(pid_t pid, const char *name, size_t limit)
{
    return read_text_file("/proc/" + std::to_string(pid) + "/" + name, limit).value_or("");
}

std::vector<std::string> split(const std::string &text, std::string_view separators)
{
    std::vector<std::string> words;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find_first_of(separators, start);
        if (end == std::string::npos)
            end = text.size();
        if (end > start)
            words.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return words;
}

std::string directory_of(const std::string &path)
{
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// The NUL-terminated string at `offset` of `image`, of at most
// kMaxCacheString bytes, or nullopt: entries pointing into a long run
// without a NUL must not cost a scan to the end each.
std::optional<std::string> string_in(const std::string &image, uint64_t offset)
{
    if (offset >= image.size())
        return std::nullopt;
    size_t room = std::min(image.size() - size_t(offset), kMaxCacheString);
    const void *end = std::memchr(image.data() + offset, '\0', room);
    if (!end)
        return std::nullopt;
    return std::string(image.data() + offset, static_cast<const char *>(end));
}

} // namespace

LibraryCache LibraryCache::parse(const std::string &image, uint16_t machine)
{
    LibraryCache cache;
    size_t start = 0;
    if (image.compare(0, sizeof kOldCacheMagic - 1, kOldCacheMagic) == 0 && image.size() >= 16) {
        uint32_t old_count;
        std::memcpy(&old_count, image.data() + 12, 4);
        start = (16 + uint64_t(old_count) * kOldEntryBytes + 7) / 8 * 8; // the new part follows
    }
    if (start > image.size() || image.size() - start < kCacheHeaderBytes ||
        image.compare(start, sizeof kCacheMagic - 1, kCacheMagic) != 0)
        return cache;
    std::string part = image.substr(start);
    uint32_t count;
    std::memcpy(&count, part.data() + 20, 4);
    if (count > (part.size() - kCacheHeaderBytes) / kCacheEntryBytes)
        return cache;
    const int32_t wanted_flags = cache_flags_for(machine);
    for (uint32_t i = 0; i < std::min(count, kMaxCacheEntries); ++i) {
        const char *entry = part.data() + kCacheHeaderBytes + size_t(i) * kCacheEntryBytes;
        int32_t flags;
        uint32_t key, value;
        uint64_t hwcap;
        std::memcpy(&flags, entry, 4);
        std::memcpy(&key, entry + 4, 4);
        std::memcpy(&value, entry + 8, 4);
        std::memcpy(&hwcap, entry + 16, 8);
        if (flags != wanted_flags || hwcap != 0) // another machine, or a hwcaps variant
            continue;
        auto soname = string_in(part, key), path = string_in(part, value);
        if (soname && path && !path->empty() && (*path)[0] == '/')
            cache.paths_.try_emplace(*soname, *path);
    }
    return cache;
}

LibraryCache LibraryCache::of_process(pid_t pid, uint16_t machine)
{
    auto file = open_in_root(pid, "/etc/ld.so.cache");
    struct stat st;
    if (!file || fstat(file->fd.get(), &st) != 0 || size_t(st.st_size) > kMaxCacheBytes)
        return {};
    std::string image(size_t(st.st_size), '\0');
    if (pread(file->fd.get(), image.data(), image.size(), 0) != ssize_t(image.size()))
        return {};
    return parse(image, machine);
}

std::optional<std::string> LibraryCache::find(const std::string &soname) const
{
    auto found = paths_.find(soname);
    if (found == paths_.end())
        return std::nullopt;
    return found->second;
}

std::optional<std::string> expand_origin(const std::string &text, const std::string &object_path)
{
    std::string expanded;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '$') {
            expanded += text[i];
            continue;
        }
        if (text.compare(i, 7, "$ORIGIN") == 0) {
            i += 6;
        } else if (text.compare(i, 9, "${ORIGIN}") == 0) {
            i += 8;
        } else {
            return std::nullopt;
        }
        expanded += directory_of(object_path);
    }
    return expanded;
}

LibrarySearch::LibrarySearch(pid_t pid, uint16_t machine)
    : pid_(pid), machine_(machine), cache_(LibraryCache::of_process(pid, machine))
{
    read_environment();
}

// A process started in secure-execution mode (setuid and the like) has its
// linker ignore LD_LIBRARY_PATH and most of LD_PRELOAD: the tracer ignores them.
void LibrarySearch::read_environment()
{
    std::string auxv = read_proc_file(pid_, "auxv", 4096);
    for (size_t at = 0; at + 16 <= auxv.size(); at += 16) {
        uint64_t type, value;
        std::memcpy(&type, auxv.data() + at, 8);
        std::memcpy(&value, auxv.data() + at + 8, 8);
        if (type == AT_SECURE)
            secure_ = value != 0;
    }
    if (secure_)
        return;
    std::string environment = read_proc_file(pid_, "environ", kMaxEnvironmentBytes);
    for (const auto &entry : split(environment, std::string_view("\0", 1))) {
        if (entry.rfind("LD_LIBRARY_PATH=", 0) == 0)
            library_path_ = entry.substr(16);
        else if (entry.rfind("LD_PRELOAD=", 0) == 0)
            preloads_ = split(entry.substr(11), " :");
    }
}

// What is not found once the budget is spent is attached when the linker
// maps it (the link-map hook).
bool LibrarySearch::spend_try() const
{
    if (files_tried_ >= kMaxFilesTried)
        return false;
    ++files_tried_;
    return true;
}

std::optional<LoadingObject> LibrarySearch::try_path(const std::string &path, int needer) const
{
    if (!spend_try())
        return std::nullopt;
    auto file = open_in_root(pid_, path);
    if (!file)
        return std::nullopt;
    auto dynamic = read_elf_dynamic(file->fd.get());
    struct stat st;
    if (!dynamic || dynamic->machine != machine_ || fstat(file->fd.get(), &st) != 0)
        return std::nullopt; // the linker, too, passes over another machine's library
    return LoadingObject{path, std::move(*dynamic), needer, st.st_dev, st.st_ino};
}

std::optional<LoadingObject> LibrarySearch::try_directories(const std::string &list,
                                                            const std::string &name,
                                                            const std::string &origin,
                                                            int needer) const
{
    for (const auto &directory : split(list, ":;")) {
        if (!spend_try())
            break;
        auto expanded = expand_origin(directory, origin);
        if (!expanded || expanded->empty() || (*expanded)[0] != '/')
            continue; // relative entries depend on the process's working directory
        if (auto found = try_path(*expanded + "/" + name, needer))
            return found;
    }
    return std::nullopt;
}

std::optional<LoadingObject> LibrarySearch::find(const std::string &name,
                                                 const std::vector<LoadingObject> &objects,
                                                 int needer) const
{
    if (files_tried_ >= kMaxFilesTried)
        return std::nullopt;
    const LoadingObject *loader = needer >= 0 ? &objects[size_t(needer)] : &objects[0];
    if (name.find('/') != std::string::npos) {
        auto expanded = expand_origin(name, loader->path);
        return expanded && (*expanded)[0] == '/' ? try_path(*expanded, needer) : std::nullopt;
    }
    // DT_RPATH of the needer and of the objects that loaded it, unless it has a DT_RUNPATH.
    // The executable's DT_RPATH applies to every object loaded on its behalf.
    if (loader->dynamic.runpath.empty()) {
        bool executable_seen = false;
        for (const LoadingObject *object = loader; object;
             object = object->loader >= 0 ? &objects[size_t(object->loader)] : nullptr) {
            executable_seen = executable_seen || object == &objects[0];
            if (auto found = try_directories(object->dynamic.rpath, name, object->path, needer))
                return found;
        }
        if (!executable_seen && objects[0].dynamic.runpath.empty())
            if (auto found =
                    try_directories(objects[0].dynamic.rpath, name, objects[0].path, needer))
                return found;
    }
    if (auto found = try_directories(library_path_, name, loader->path, needer))
        return found;
    if (auto found = try_directories(loader->dynamic.runpath, name, loader->path, needer))
        return found;
    if (loader->dynamic.no_default_paths)
        return std::nullopt;
    if (auto cached = cache_.find(name))
        if (auto found = try_path(*cached, needer))
            return found;
    for (const auto &directory : default_directories(machine_))
        if (auto found = try_path(directory + "/" + name, needer))
            return found;
    return std::nullopt;
}

} // namespace posixtrace
