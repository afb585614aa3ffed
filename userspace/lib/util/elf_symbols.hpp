#pragma once
#include <gelf.h>

#include <cstdint>
#include <optional>
#include <string>

#include "util/elf_file.hpp"

namespace posixtrace {

// Symbol tables larger than this are not read: libelf reads a section whole,
// and a file a traced process controls may announce gigabytes.
constexpr size_t kMaxSymbolTableBytes = 64 << 20;

// The defined symbol `name` of .dynsym or .symtab.
std::optional<GElf_Sym> find_symbol(const ElfFile &elf, const char *name);

// The file offset of function `name` of the ELF file at `path`, where a
// uprobe on it goes; nullopt when absent or outside a loaded segment.
std::optional<uint64_t> symbol_file_offset(const std::string &path, const char *name);

} // namespace posixtrace
