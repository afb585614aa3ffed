#include "usdt/usdt_notes.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>

#include "util/elf_file.hpp"

namespace posixtrace {
namespace {

constexpr uint32_t kStapsdtNoteType = 3;

// "eax" -> "rax", "r8d" -> "r8", "sil" -> "rsi": the 64-bit register holding it.
std::optional<std::string> full_register(std::string name)
{
    static const char *const legacy[][5] = {
        {"rax", "eax", "ax", "al", nullptr},        {"rbx", "ebx", "bx", "bl", nullptr},
        {"rcx", "ecx", "cx", "cl", nullptr},        {"rdx", "edx", "dx", "dl", nullptr},
        {"rsi", "esi", "si", "sil", nullptr},       {"rdi", "edi", "di", "dil", nullptr},
        {"rbp", "ebp", "bp", "bpl", nullptr},       {"rsp", "esp", "sp", "spl", nullptr},
        {"rip", nullptr, nullptr, nullptr, nullptr}};
    for (const auto &row : legacy)
        for (int i = 0; i < 5 && row[i]; ++i)
            if (name == row[i])
                return std::string(row[0]);
    if (name.size() >= 2 && name[0] == 'r' && isdigit(static_cast<unsigned char>(name[1]))) {
        while (!name.empty() && (name.back() == 'd' || name.back() == 'w' || name.back() == 'b'))
            name.pop_back();
        return name;
    }
    return std::nullopt;
}

std::optional<UsdtArgument> parse_argument(const std::string &text)
{
    UsdtArgument argument;
    size_t at = text.find('@');
    if (at == std::string::npos)
        return std::nullopt;
    try {
        argument.size = std::stoi(text.substr(0, at));
    } catch (...) {
        return std::nullopt;
    }
    std::string location = text.substr(at + 1);
    if (location.empty())
        return std::nullopt;
    if (location[0] == '$') {
        argument.kind = UsdtArgument::Kind::Constant;
        try {
            argument.value = std::stoll(location.substr(1), nullptr, 0);
        } catch (...) {
            return std::nullopt;
        }
        return argument;
    }
    if (location[0] == '%') {
        auto reg = full_register(location.substr(1));
        if (!reg)
            return std::nullopt;
        argument.kind = UsdtArgument::Kind::Register;
        argument.reg = *reg;
        return argument;
    }
    size_t open = location.find("(%"), close = location.find(')');
    if (open == std::string::npos || close == std::string::npos || close < open)
        return std::nullopt;
    auto reg = full_register(location.substr(open + 2, close - open - 2));
    if (!reg)
        return std::nullopt;
    argument.kind = UsdtArgument::Kind::RegisterDeref;
    argument.reg = *reg;
    try {
        argument.value = open ? std::stoll(location.substr(0, open), nullptr, 0) : 0;
    } catch (...) {
        return std::nullopt;
    }
    return argument;
}

} // namespace

bool usdt_spec_matches(const std::string &spec, const std::string &provider,
                       const std::string &name)
{
    if (spec == "*") // libposixtrace's own probes already bring the user events
        return provider != "posix_trace";
    auto colon = spec.find(':');
    if (colon == std::string::npos)
        return false;
    std::string want_provider = spec.substr(0, colon), want_name = spec.substr(colon + 1);
    return want_provider == provider && (want_name == "*" || want_name == name);
}

std::optional<std::vector<UsdtArgument>> parse_usdt_arguments(const std::string &text)
{
    std::vector<UsdtArgument> arguments;
    std::istringstream words(text);
    std::string word;
    while (words >> word) {
        auto argument = parse_argument(word);
        if (!argument)
            return std::nullopt;
        arguments.push_back(*argument);
    }
    return arguments;
}

// Every section the file's header announces lies within the file: a file
// cut short (a partial copy, a download that stopped) is damaged, not a file
// without probes.
static bool sections_within_file(const ElfFile &file)
{
    Elf *elf = file.get();
    size_t file_size = file.size();
    GElf_Ehdr header;
    if (!file_size || !gelf_getehdr(elf, &header))
        return false;
    size_t count = 0;
    if (elf_getshdrnum(elf, &count) != 0 || header.e_shoff > file_size ||
        count * header.e_shentsize > file_size - header.e_shoff)
        return false;
    for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf, section));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(section, &sh))
            return false;
        if (sh.sh_type != SHT_NOBITS &&
            (sh.sh_offset > file_size || sh.sh_size > file_size - sh.sh_offset))
            return false;
    }
    return true;
}

// The link-time address of the section named `wanted`, if the file has one.
static std::optional<uint64_t> section_address(Elf *elf, size_t section_names, const char *wanted)
{
    for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf, section));) {
        GElf_Shdr header;
        const char *name;
        if (gelf_getshdr(section, &header) &&
            (name = elf_strptr(elf, section_names, header.sh_name)) &&
            std::strcmp(name, wanted) == 0)
            return header.sh_addr;
    }
    return std::nullopt;
}

// Where each probe's uprobe goes. A note records the addresses the object
// was linked at, and the address of .stapsdt.base then: a tool that moved
// the object afterwards (prelink) moved that section too, by the same amount.
static void locate_sites(const ElfFile &elf, size_t section_names, std::vector<UsdtProbe> &probes)
{
    auto base = section_address(elf.get(), section_names, ".stapsdt.base");
    for (auto &probe : probes) {
        uint64_t moved = base && probe.base ? *base - probe.base : 0;
        probe.site_offset = elf.file_offset_of(probe.address + moved, true);
        if (!probe.semaphore)
            continue;
        // The kernel counts in the semaphore's two bytes: both in the file.
        auto semaphore = elf.file_offset_of(probe.semaphore + moved, false);
        if (semaphore && *semaphore + sizeof(uint16_t) <= elf.size())
            probe.semaphore_offset = *semaphore;
        else
            probe.site_offset.reset(); // its guard could not be raised: it would never fire
    }
}

int read_usdt_probes(const std::string &path, std::vector<UsdtProbe> &probes)
{
    errno = 0;
    ElfFile elf(path);
    if (!elf.opened())
        return errno ? errno : ENOEXEC;
    if (!elf.valid() || gelf_getclass(elf.get()) != ELFCLASS64)
        return ENOEXEC;
    size_t section_names;
    if (elf_getshdrstrndx(elf.get(), &section_names) != 0 || !sections_within_file(elf) ||
        !elf.section_fits(section_names, kMaxSectionNamesBytes))
        return ENOEXEC;

    probes.clear();
    for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf.get(), section));) {
        GElf_Shdr header;
        if (!gelf_getshdr(section, &header) || header.sh_type != SHT_NOTE)
            continue;
        const char *name = elf_strptr(elf.get(), section_names, header.sh_name);
        if (!name || std::strcmp(name, ".note.stapsdt") != 0)
            continue;
        Elf_Data *data = elf.section_data(section, kMaxNotesBytes);
        if (!data)
            return ENOEXEC;
        GElf_Nhdr note;
        size_t offset = 0, name_offset, desc_offset;
        while ((offset = gelf_getnote(data, offset, &note, &name_offset, &desc_offset)) > 0) {
            if (note.n_type != kStapsdtNoteType || note.n_descsz < 3 * 8 + 3)
                continue;
            const char *desc = static_cast<const char *>(data->d_buf) + desc_offset;
            const char *end = desc + note.n_descsz;
            UsdtProbe probe;
            std::memcpy(&probe.address, desc, 8);
            std::memcpy(&probe.base, desc + 8, 8);
            std::memcpy(&probe.semaphore, desc + 16, 8);
            const char *text = desc + 24;
            const char *strings[3];
            for (auto &field : strings) {
                field = text;
                text = static_cast<const char *>(std::memchr(text, '\0', size_t(end - text)));
                if (!text)
                    return ENOEXEC;
                ++text;
            }
            probe.provider = strings[0];
            probe.name = strings[1];
            probe.arguments = strings[2];
            if (auto parsed = parse_usdt_arguments(probe.arguments))
                probe.parsed = std::move(*parsed);
            probes.push_back(std::move(probe));
        }
    }
    locate_sites(elf, section_names, probes);
    return 0;
}

} // namespace posixtrace
