#include "util/elf_dynamic.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace posixtrace {
namespace {

// Far above what linkers produce (a few dozen headers, a few hundred
// dynamic entries, paths of PATH_MAX), far below what would cost the tracer.
constexpr size_t kMaxProgramHeaders = 4096;
constexpr size_t kMaxDynamicBytes = 64 * 1024;
constexpr size_t kMaxString = 4096;
constexpr size_t kMaxNeeded = 1024;

bool read_at(int fd, void *buffer, size_t length, uint64_t offset, uint64_t file_size)
{
    return offset <= file_size && length <= file_size - offset &&
           pread(fd, buffer, length, off_t(offset)) == ssize_t(length);
}

class DynamicReader {
public:
    DynamicReader(int fd, uint64_t file_size) : fd_(fd), file_size_(file_size) {}

    bool read_headers(ElfDynamicInfo &info)
    {
        Elf64_Ehdr header;
        if (!read_at(fd_, &header, sizeof header, 0, file_size_) ||
            std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
            header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
            header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > kMaxProgramHeaders ||
            header.e_phnum == PN_XNUM)
            return false;
        info.machine = header.e_machine;
        segments_.resize(header.e_phnum);
        return read_at(fd_, segments_.data(), segments_.size() * sizeof(Elf64_Phdr), header.e_phoff,
                       file_size_);
    }

    bool read_interpreter(ElfDynamicInfo &info) const
    {
        for (const auto &segment : segments_) {
            if (segment.p_type != PT_INTERP)
                continue;
            auto path = string_at(segment.p_offset, segment.p_filesz);
            if (!path)
                return false;
            info.interpreter = *path;
        }
        return true;
    }

    bool read_dynamic(ElfDynamicInfo &info)
    {
        const Elf64_Phdr *dynamic = nullptr;
        for (const auto &segment : segments_)
            if (segment.p_type == PT_DYNAMIC)
                dynamic = &segment;
        if (!dynamic)
            return true; // static: loads nothing
        info.is_dynamic = true;
        if (dynamic->p_filesz > kMaxDynamicBytes)
            return false;
        std::vector<Elf64_Dyn> entries(dynamic->p_filesz / sizeof(Elf64_Dyn));
        if (!read_at(fd_, entries.data(), entries.size() * sizeof(Elf64_Dyn), dynamic->p_offset,
                     file_size_))
            return false;
        uint64_t strtab = 0, strsz = 0;
        for (const auto &entry : entries) {
            if (entry.d_tag == DT_NULL)
                break;
            if (entry.d_tag == DT_STRTAB)
                strtab = entry.d_un.d_ptr;
            else if (entry.d_tag == DT_STRSZ)
                strsz = entry.d_un.d_val;
            else if (entry.d_tag == DT_FLAGS_1 && (entry.d_un.d_val & DF_1_NODEFLIB))
                info.no_default_paths = true;
        }
        auto strings = file_offset_of(strtab);
        if (!strings || strsz > file_size_ - *strings)
            return false;
        return read_dynamic_strings(entries, *strings, strsz, info);
    }

private:
    bool read_dynamic_strings(const std::vector<Elf64_Dyn> &entries, uint64_t strings,
                              uint64_t strsz, ElfDynamicInfo &info) const
    {
        for (const auto &entry : entries) {
            if (entry.d_tag == DT_NULL)
                break;
            if (entry.d_tag != DT_NEEDED && entry.d_tag != DT_RPATH && entry.d_tag != DT_RUNPATH)
                continue;
            if (entry.d_un.d_val >= strsz)
                return false;
            auto text = string_at(strings + entry.d_un.d_val, strsz - entry.d_un.d_val);
            if (!text)
                return false;
            if (entry.d_tag == DT_NEEDED && info.needed.size() < kMaxNeeded)
                info.needed.push_back(*text);
            else if (entry.d_tag == DT_RPATH)
                info.rpath = *text;
            else if (entry.d_tag == DT_RUNPATH)
                info.runpath = *text;
        }
        return true;
    }

    // The file offset of a virtual address within a loaded segment's file bytes.
    std::optional<uint64_t> file_offset_of(uint64_t address) const
    {
        for (const auto &segment : segments_)
            if (segment.p_type == PT_LOAD && address >= segment.p_vaddr &&
                address - segment.p_vaddr < segment.p_filesz && segment.p_offset <= file_size_)
                return segment.p_offset + (address - segment.p_vaddr);
        return std::nullopt;
    }

    // A NUL-terminated string at `offset` within `limit` bytes (and kMaxString).
    std::optional<std::string> string_at(uint64_t offset, uint64_t limit) const
    {
        if (offset > file_size_)
            return std::nullopt;
        size_t length = size_t(std::min<uint64_t>({limit, kMaxString, file_size_ - offset}));
        std::string bytes(length, '\0');
        if (length == 0 || pread(fd_, bytes.data(), length, off_t(offset)) != ssize_t(length))
            return std::nullopt;
        size_t end = bytes.find('\0');
        if (end == std::string::npos)
            return std::nullopt;
        bytes.resize(end);
        return bytes;
    }

    int fd_;
    uint64_t file_size_;
    std::vector<Elf64_Phdr> segments_;
};

} // namespace

std::optional<ElfDynamicInfo> read_elf_dynamic(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return std::nullopt;
    DynamicReader reader(fd, uint64_t(st.st_size));
    ElfDynamicInfo info;
    if (!reader.read_headers(info) || !reader.read_interpreter(info) || !reader.read_dynamic(info))
        return std::nullopt;
    return info;
}

} // namespace posixtrace
