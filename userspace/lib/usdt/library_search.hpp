#pragma once
// Where a process's dynamic linker will find the libraries it loads, worked
// out by reading files only: the objects' dynamic sections, the process's
// environment and its /etc/ld.so.cache, all inside the process's root. No
// program is run, so nothing the process controls can run as the tracer.
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/elf_dynamic.hpp"

namespace posixtrace {

// The sonames of a process's /etc/ld.so.cache, for one machine type.
class LibraryCache {
public:
    // Reads `pid`'s /etc/ld.so.cache (empty when absent, too large or damaged).
    static LibraryCache of_process(pid_t pid, uint16_t machine);
    // Parses a cache image; public for tests and fuzzing.
    static LibraryCache parse(const std::string &image, uint16_t machine);

    std::optional<std::string> find(const std::string &soname) const;
    size_t size() const { return paths_.size(); }

private:
    std::map<std::string, std::string> paths_;
};

// An object the linker has loaded or will load, as the search needs it.
struct LoadingObject {
    std::string path; // in the process's view
    ElfDynamicInfo dynamic;
    int loader = -1;  // index of the object that needed it; -1 for the executable and preloads
    dev_t device = 0; // the file, which the linker loads once whatever its names
    ino_t inode = 0;
};

// The search of one process: its environment's choices, its cache.
class LibrarySearch {
public:
    LibrarySearch(pid_t pid, uint16_t machine);

    // LD_PRELOAD's libraries, as named (a name without '/' is searched for).
    const std::vector<std::string> &preloads() const { return preloads_; }

    // The file `name`, needed by objects[needer], resolves to: its path in
    // the process's view and its dynamic info, or nullopt when none found.
    std::optional<LoadingObject> find(const std::string &name,
                                      const std::vector<LoadingObject> &objects, int needer) const;

private:
    bool spend_try() const;
    std::optional<LoadingObject> try_path(const std::string &path, int needer) const;
    std::optional<LoadingObject> try_directories(const std::string &list, const std::string &name,
                                                 const std::string &origin, int needer) const;
    void read_environment();

    pid_t pid_;
    uint16_t machine_;
    mutable size_t files_tried_ = 0; // files and directories; bounded (kMaxFilesTried)
    bool secure_ = false;
    std::string library_path_;
    std::vector<std::string> preloads_;
    LibraryCache cache_;
};

// "$ORIGIN/../lib" with the directory of `object_path`; nullopt for a
// dynamic string token we cannot expand the linker's way ($LIB, $PLATFORM).
std::optional<std::string> expand_origin(const std::string &text, const std::string &object_path);

} // namespace posixtrace
