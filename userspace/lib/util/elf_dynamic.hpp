#pragma once
// What the dynamic linker reads of an object to know what to load next: its
// program headers and its dynamic section, read with pread from a file a
// traced process controls. Every size and offset is checked against the file
// and capped, so a crafted or truncated file gives "not usable", never a
// fault, a huge allocation or a long walk.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace posixtrace {

struct ElfDynamicInfo {
    uint16_t machine = 0;            // e_machine
    std::string interpreter;         // PT_INTERP, "" when none
    std::vector<std::string> needed; // DT_NEEDED, in order
    std::string rpath, runpath;      // DT_RPATH, DT_RUNPATH (unexpanded)
    bool no_default_paths = false;   // DF_1_NODEFLIB
    bool is_dynamic = false;         // has a PT_DYNAMIC
};

// nullopt for a file that is not a 64-bit little-endian ELF object, or whose
// headers point outside it or past the caps.
std::optional<ElfDynamicInfo> read_elf_dynamic(int fd);

} // namespace posixtrace
