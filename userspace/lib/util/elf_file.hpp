#pragma once
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <memory>
#include <string>

#include "util/unique_fd.hpp"

namespace posixtrace {

// An ELF file opened for reading with libelf; ends the descriptor and the
// Elf handle when it goes.
class ElfFile {
public:
    explicit ElfFile(const std::string &path)
    {
        if (elf_version(EV_CURRENT) == EV_NONE)
            return;
        fd_.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd_)
            elf_.reset(elf_begin(fd_.get(), ELF_C_READ, nullptr));
        if (elf_ && elf_kind(elf_.get()) != ELF_K_ELF)
            elf_.reset();
    }
    // Opened and an ELF file.
    bool valid() const { return elf_ != nullptr; }
    bool opened() const { return bool(fd_); }
    Elf *get() const { return elf_.get(); }

private:
    struct ElfDeleter {
        void operator()(Elf *elf) const { elf_end(elf); }
    };
    UniqueFd fd_;
    std::unique_ptr<Elf, ElfDeleter> elf_;
};

} // namespace posixtrace
