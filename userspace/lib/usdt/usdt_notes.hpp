#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace posixtrace {

// One argument of a USDT probe as its note describes it, e.g. "-4@%edi" or
// "8@-16(%rbp)".
struct UsdtArgument {
    enum class Kind { Constant, Register, RegisterDeref };
    Kind kind = Kind::Constant;
    int size = 8;      // bytes; negative when signed
    std::string reg;   // 64-bit register name, without '%': "rdi", "r8"
    int64_t value = 0; // the constant, or the offset of a dereference
};

// One probe site from an ELF file's .note.stapsdt section.
struct UsdtProbe {
    std::string provider;
    std::string name;
    uint64_t address = 0;   // link-time address of the probe site
    uint64_t base = 0;      // link-time address of .stapsdt.base
    uint64_t semaphore = 0; // link-time address, 0 when none
    std::string arguments;  // as written in the note
    std::vector<UsdtArgument> parsed;
    // Where a uprobe goes: the site's offset in the file, and its
    // semaphore's (0: none). nullopt when the addresses lie in no loaded
    // segment of the file: such a site cannot be attached.
    std::optional<uint64_t> site_offset;
    uint64_t semaphore_offset = 0;
};

// Notes sections larger than this are refused (ENOEXEC): real ones are
// kilobytes, and libelf reads a section whole.
constexpr size_t kMaxNotesBytes = 16 << 20;
// The same for the section names (a few hundred bytes in real files).
constexpr size_t kMaxSectionNamesBytes = 1 << 20;

// The USDT probes of an ELF file; 0, or an errno (ENOENT, EACCES, ENOEXEC
// for a file that is not ELF or is truncated).
int read_usdt_probes(const std::string &path, std::vector<UsdtProbe> &probes);

// "PROVIDER:NAME", "PROVIDER:*" or "*" against one probe.
bool usdt_spec_matches(const std::string &spec, const std::string &provider,
                       const std::string &name);

// Parses an x86-64 argument list ("4@%edi 8@%rsi ..."); nullopt when an
// argument is not understood.
std::optional<std::vector<UsdtArgument>> parse_usdt_arguments(const std::string &text);

} // namespace posixtrace
