#include "util/own_objects.hpp"

#include <link.h>
#include <unistd.h>

#include <cstdint>

#include "util/process_files.hpp"

namespace posixtrace {
namespace {

// The name the dynamic linker knows the object by: the path it was found
// at, which is relative when LD_LIBRARY_PATH or a runpath was.
std::string loaded_name_of(uintptr_t address)
{
    struct Search {
        uintptr_t address;
        std::string path;
    } search{address, {}};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *s = static_cast<Search *>(data);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                uintptr_t start = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type == PT_LOAD && s->address >= start &&
                    s->address < start + ph.p_memsz) {
                    s->path = info->dlpi_name ? info->dlpi_name : "";
                    return 1;
                }
            }
            return 0;
        },
        &search);
    return search.path;
}

} // namespace

// The kernel's name of the mapping first: absolute, whatever the working
// directory was when the object was loaded and is now. Where the maps do
// not list it (a file deleted since, past the listing's cap), the dynamic
// linker's name, even relative: a name that leads nowhere costs the lanes,
// another object's name would cost every event twice.
std::string object_path_of(const void *address)
{
    auto at = reinterpret_cast<uintptr_t>(address);
    for (const MappedExecutable &mapping : list_mapped_executables(getpid()))
        if (at >= mapping.start && at < mapping.end)
            return mapping.name;
    if (std::string loaded = loaded_name_of(at); !loaded.empty())
        return loaded;
    char exe[4096]; // the program itself: the dynamic linker names it ""
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    return n > 0 ? std::string(exe, size_t(n)) : std::string("/proc/self/exe");
}

} // namespace posixtrace
