#include "util/own_objects.hpp"

#include <link.h>
#include <unistd.h>

#include <cstdint>

namespace posixtrace {

std::string object_path_of(const void *address)
{
    struct Search {
        uintptr_t address;
        std::string path;
        bool found;
    } search{reinterpret_cast<uintptr_t>(address), {}, false};

    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *s = static_cast<Search *>(data);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                uintptr_t start = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type == PT_LOAD && s->address >= start &&
                    s->address < start + ph.p_memsz) {
                    s->path = info->dlpi_name ? info->dlpi_name : "";
                    s->found = true;
                    return 1;
                }
            }
            return 0;
        },
        &search);
    if (search.found && !search.path.empty())
        return search.path;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    return n > 0 ? std::string(exe, size_t(n)) : std::string("/proc/self/exe");
}

} // namespace posixtrace
