// libFuzzer target for what the tracer reads from a traced process's ELF
// files (docs/security.md): the .note.stapsdt parser, the argument specs and
// the sites' offsets (usdt/usdt_notes.cpp), PT_INTERP (interpreter_of), the
// symbol lookups (symbol_and_first_load, symbol_file_offset), the program
// headers and dynamic section (read_elf_dynamic), and, the same bytes taken
// as the process's /etc/ld.so.cache, the cache's parser (LibraryCache). The input is the
// file, held in a memfd and named /proc/self/fd/N as the tracer names the
// files it opened. `make fuzz` builds it; scripts/fuzz.sh runs it.
#include "fuzz_check.hpp"
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "events/remote_user_events.hpp"
#include "events/user_event_table.hpp"
#include "usdt/library_search.hpp"
#include "usdt/probe_attacher.hpp"
#include "usdt/usdt_notes.hpp"
#include "util/elf_dynamic.hpp"
#include "util/elf_symbols.hpp"

namespace {

void check_probes(const std::vector<posixtrace::UsdtProbe> &probes, size_t size)
{
    for (const auto &probe : probes) {
        // Every string came from the file.
        FUZZ_CHECK(probe.provider.size() + probe.name.size() + probe.arguments.size() < size);
        // Arguments are decoded when all of them are understood, else none.
        auto parsed = posixtrace::parse_usdt_arguments(probe.arguments);
        FUZZ_CHECK(parsed ? parsed->size() == probe.parsed.size() : probe.parsed.empty());
        // A site is attached where the file holds it, never past its end.
        FUZZ_CHECK(!probe.site_offset || *probe.site_offset < size);
        FUZZ_CHECK(!probe.semaphore_offset || probe.semaphore_offset + 2 <= size);
        for (const auto &argument : probe.parsed)
            FUZZ_CHECK(argument.kind == posixtrace::UsdtArgument::Kind::Constant ||
                       !argument.reg.empty());
        posixtrace::usdt_spec_matches(probe.provider + ":" + probe.name, probe.provider,
                                      probe.name);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("elf", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(write(fd, data, size) == ssize_t(size));
    std::string path = "/proc/self/fd/" + std::to_string(fd);

    std::vector<posixtrace::UsdtProbe> probes;
    int err = posixtrace::read_usdt_probes(path, probes);
    FUZZ_CHECK(err == 0 || err == ENOEXEC);
    if (err == 0)
        check_probes(probes, size);

    std::string interpreter = posixtrace::interpreter_of(path);
    FUZZ_CHECK(interpreter.size() < size || interpreter.empty());
    uint64_t value = 0, first_load = 0;
    posixtrace::symbol_and_first_load(path, posixtrace::kUserEventTableSymbol, value, first_load);
    auto hook = posixtrace::symbol_file_offset(path, "_dl_debug_state");
    FUZZ_CHECK(!hook || *hook < size);
    if (auto dynamic = posixtrace::read_elf_dynamic(fd)) {
        FUZZ_CHECK(dynamic->needed.size() <= 1024);
        for (const auto &name : dynamic->needed)
            FUZZ_CHECK(name.size() < 4096 && name.find('\0') == std::string::npos);
    }
    auto cache = posixtrace::LibraryCache::parse(
        std::string(reinterpret_cast<const char *>(data), size), EM_X86_64);
    FUZZ_CHECK(cache.size() <= size / 24);
    close(fd);
    return 0;
}
