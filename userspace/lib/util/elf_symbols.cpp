#include "util/elf_symbols.hpp"

#include <cstring>

namespace posixtrace {

std::optional<GElf_Sym> find_symbol(const ElfFile &elf, const char *name)
{
    for (Elf_Scn *section = nullptr; (section = elf_nextscn(elf.get(), section));) {
        GElf_Shdr header;
        if (!gelf_getshdr(section, &header) ||
            (header.sh_type != SHT_DYNSYM && header.sh_type != SHT_SYMTAB) || !header.sh_entsize)
            continue;
        // Its names too are read whole, by elf_strptr.
        Elf_Data *data = elf.section_fits(header.sh_link, kMaxSymbolTableBytes)
                             ? elf.section_data(section, kMaxSymbolTableBytes)
                             : nullptr;
        for (size_t i = 0; data && i < header.sh_size / header.sh_entsize; ++i) {
            GElf_Sym symbol;
            const char *symbol_name;
            if (gelf_getsym(data, int(i), &symbol) && symbol.st_value &&
                (symbol_name = elf_strptr(elf.get(), header.sh_link, symbol.st_name)) &&
                std::strcmp(symbol_name, name) == 0)
                return symbol;
        }
    }
    return std::nullopt;
}

std::optional<uint64_t> symbol_file_offset(const std::string &path, const char *name)
{
    ElfFile elf(path);
    if (!elf.valid())
        return std::nullopt;
    auto symbol = find_symbol(elf, name);
    return symbol ? elf.file_offset_of(symbol->st_value, true) : std::nullopt;
}

} // namespace posixtrace
