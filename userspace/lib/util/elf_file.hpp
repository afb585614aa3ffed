#pragma once
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>

#include "util/unique_fd.hpp"

namespace posixtrace {

// An ELF file opened for reading with libelf; ends the descriptor and the
// Elf handle when it goes. libelf reads only the parts asked for: nothing
// here calls elf_rawfile, which reads the whole file (measured: 230 ms for
// the dozen libraries of an ASan process, most of an exec's attach time),
// and the file is read, not mapped, so a traced process truncating it under
// the tracer cannot fault it.
class ElfFile {
public:
    explicit ElfFile(const std::string &path)
    {
        if (elf_version(EV_CURRENT) == EV_NONE)
            return;
        fd_.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        struct stat st;
        if (fd_ && fstat(fd_.get(), &st) == 0 && st.st_size > 0)
            size_ = size_t(st.st_size);
        if (fd_)
            elf_.reset(elf_begin(fd_.get(), ELF_C_READ, nullptr));
        if (elf_ && elf_kind(elf_.get()) != ELF_K_ELF)
            elf_.reset();
    }
    // Opened and an ELF file.
    bool valid() const { return elf_ != nullptr; }
    bool opened() const { return bool(fd_); }
    Elf *get() const { return elf_.get(); }

    // The file's size when opened (the bound of every read: one that a
    // file cut since comes short, and fails), or 0 when it cannot be told.
    size_t size() const { return size_; }

    // Whether `section` is at most `cap` bytes and lies within the file:
    // libelf allocates and reads a section whole when its data or one of its
    // strings (elf_strptr) is asked for, and a sparse file may announce
    // gigabytes. Check before either.
    bool section_fits(Elf_Scn *section, size_t cap) const
    {
        GElf_Shdr header;
        size_t file_size = size();
        return section && gelf_getshdr(section, &header) && header.sh_size <= cap &&
               header.sh_offset <= file_size && header.sh_size <= file_size - header.sh_offset;
    }
    bool section_fits(size_t index, size_t cap) const
    {
        return section_fits(elf_getscn(elf_.get(), index), cap);
    }

    // The data of `section`, read whole, or nullptr when it does not fit.
    Elf_Data *section_data(Elf_Scn *section, size_t cap) const
    {
        return section_fits(section, cap) ? elf_getdata(section, nullptr) : nullptr;
    }

    // The file offset of link-time `address` within a loaded segment's file
    // bytes (an executable one when `executable`), or nullopt.
    std::optional<uint64_t> file_offset_of(uint64_t address, bool executable) const
    {
        size_t count = 0;
        if (elf_getphdrnum(elf_.get(), &count) != 0)
            return std::nullopt;
        for (size_t i = 0; i < count; ++i) {
            GElf_Phdr segment;
            if (!gelf_getphdr(elf_.get(), int(i), &segment) || segment.p_type != PT_LOAD ||
                (executable && !(segment.p_flags & PF_X)))
                continue;
            if (address < segment.p_vaddr || address - segment.p_vaddr >= segment.p_filesz)
                continue;
            uint64_t offset = segment.p_offset + (address - segment.p_vaddr);
            return offset >= segment.p_offset && offset < size() ? std::optional(offset)
                                                                 : std::nullopt;
        }
        return std::nullopt;
    }

    // `length` bytes at `offset`, or "" when the file does not hold them all.
    std::string read(size_t offset, size_t length) const
    {
        std::string bytes(length, '\0');
        if (!fd_ || pread(fd_.get(), bytes.data(), length, off_t(offset)) != ssize_t(length))
            return {};
        return bytes;
    }

private:
    struct ElfDeleter {
        void operator()(Elf *elf) const { elf_end(elf); }
    };
    UniqueFd fd_;
    size_t size_ = 0;
    std::unique_ptr<Elf, ElfDeleter> elf_;
};

} // namespace posixtrace
