// Each probe site is read as its own note says: a posix_trace:event site of
// another libposixtrace build (other registers, arguments on the stack)
// gives the right ids and data, never values read from the wrong places.
#include <catch2/catch.hpp>
#include <elf.h>
#include <fcntl.h>
#include <posix_trace/usdt.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "reuse_support.hpp"
#include "test_support.hpp"
#include "usdt/usdt_notes.hpp"
#include "util/elf_symbols.hpp"

using namespace cli_support;
using namespace reuse_support;
using namespace test_support;

namespace {

// The argument layout of the posix_trace:event probe in `file`.
std::string event_probe_arguments(const std::string &file)
{
    std::vector<posixtrace::UsdtProbe> probes;
    REQUIRE(posixtrace::read_usdt_probes(file, probes) == 0);
    for (const auto &probe : probes)
        if (probe.provider == "posix_trace" && probe.name == "event")
            return probe.arguments;
    FAIL("no posix_trace:event probe in " << file);
    return {};
}

} // namespace

TEST_CASE("probe sites: posix_trace_event of another build is decoded by its own note",
          "[usdt][security]")
{
    // Pinned: 4@%r12d 8@%r13 8@%r14 8@%r15, the sizes libposixtrace has in
    // other registers. Unoptimised: every argument on the stack.
    auto helper =
        GENERATE(as<std::string>{}, "other_build_events_pinned", "other_build_events_unoptimised");
    INFO(helper);
    // Read by libposixtrace's own layout, the helper's events would be wrong.
    std::string helpers = helper_path("");
    std::string library = helpers.substr(0, helpers.rfind("/tests/")) + "/lib/libposixtrace.so.1";
    REQUIRE(event_probe_arguments(helper_path(helper.c_str())) != event_probe_arguments(library));
    Run run = run_cli("record --json --events user -- " + helper_path(helper.c_str()));
    REQUIRE(run.status == 0);
    static const std::regex user_event(
        R"re("event":"(other\.[ab])","id":\d+,"data_hex":"([0-9a-f]*)")re");
    std::vector<std::string> seen;
    for (const auto &line : run.lines()) {
        std::smatch match;
        if (std::regex_search(line, match, user_event))
            seen.push_back(match[1].str() + " " + match[2].str());
    }
    std::vector<std::string> expected;
    for (int i = 0; i < 10; ++i) {
        char data[16];
        std::snprintf(data, sizeof data, "%s3%d", i % 2 ? "42424242" : "41414141", i / 2);
        expected.push_back(std::string(i % 2 ? "other.b " : "other.a ") + data);
    }
    CHECK(seen == expected);
    CHECK(run.err.find(" 0 lost") != std::string::npos);
}

namespace {

// A copy of `library` whose section `name` announces `size` bytes at the end
// of the file, which is made that long (sparse: nothing on disk). A reader
// that believes the header allocates and reads it all.
std::string with_huge_section(const std::string &library, const char *name, uint64_t size)
{
    std::string copy = temp_path("huge-section");
    std::ifstream in(library, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    REQUIRE(bytes.size() > sizeof(Elf64_Ehdr));
    Elf64_Ehdr header;
    std::memcpy(&header, bytes.data(), sizeof header);
    Elf64_Shdr names;
    std::memcpy(&names, bytes.data() + header.e_shoff + header.e_shstrndx * sizeof(Elf64_Shdr),
                sizeof names);
    bool patched = false;
    for (size_t i = 0; i < header.e_shnum; ++i) {
        char *at = bytes.data() + header.e_shoff + i * sizeof(Elf64_Shdr);
        Elf64_Shdr section;
        std::memcpy(&section, at, sizeof section);
        if (std::strcmp(bytes.data() + names.sh_offset + section.sh_name, name) != 0)
            continue;
        section.sh_offset = (bytes.size() + 4095) / 4096 * 4096;
        section.sh_size = size;
        std::memcpy(at, &section, sizeof section);
        patched = true;
    }
    REQUIRE(patched);
    std::ofstream(copy, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    REQUIRE(truncate(copy.c_str(), off_t((bytes.size() + 4095) / 4096 * 4096 + size)) == 0);
    return copy;
}

// The helper library is some tens of KiB: what reading its sections (each
// once or a few times) may take, far below the section it claims.
constexpr uint64_t kMostReadOfTheLibrary = 1u << 20;

} // namespace

TEST_CASE("probe sites: a sparse 8 GiB section is refused, not read", "[usdt][security]")
{
    // The notes, the section names (which name every section) and the names
    // of the dynamic symbols (of the link-map hook's lookup).
    const char *section = GENERATE(".note.stapsdt", ".shstrtab", ".dynstr");
    INFO(section);
    std::string file = with_huge_section(helper_path("libabuselib.so"), section, 8ull << 30);
    // A fork waits while the kernel detaches a probe, as the library does in
    // the background for earlier tests' streams: the second below is the
    // read's alone once none is left.
    REQUIRE(links_released_within(std::chrono::seconds(20)));
    // In a child: its peak resident size, less what it had, is what the read
    // took; what it read of the file, beside it.
    auto result = in_child_within(std::chrono::seconds(60), [&] {
        long before = status_field_kb(getpid(), "VmRSS");
        std::optional<uint64_t> read_before = bytes_read_so_far();
        std::vector<posixtrace::UsdtProbe> probes;
        // The symbol lookup passes over .dynsym, whose names it cannot
        // read, and finds the symbol in .symtab: nothing to refuse there.
        bool refused = std::string(section) == ".dynstr"
                           ? (posixtrace::symbol_file_offset(file, "abuselib_fire"), true)
                           : posixtrace::read_usdt_probes(file, probes) == ENOEXEC;
        std::optional<uint64_t> read_after = bytes_read_so_far();
        long grew = status_field_kb(getpid(), "VmHWM") - before;
        if (!read_before || !read_after)
            return 4; // nothing to hold the read to
        return !refused                                             ? 1
               : grew > 64 * 1024                                   ? 2
               : *read_after - *read_before > kMostReadOfTheLibrary ? 3
                                                                    : 0;
    });
    unlink(file.c_str());
    REQUIRE(result);     // it did not hang
    CHECK(*result != 1); // refused
    CHECK(*result != 2); // without reading it into memory
    CHECK(*result != 3); // nor through it
    CHECK(*result != 4); // and /proc said what it read
}

// The tracer opens and parses each file a traced process maps executable; a
// process can map tens of thousands. Past POSIX_TRACE_USDT_MAX_OBJECTS the
// others are not looked at, and the stream says so.
TEST_CASE("probe sites: a process mapping more objects than the tracer reads is told unattached",
          "[usdt][security]")
{
    TempDir dir;
    std::string library = dir / "lib0.so";
    std::filesystem::copy_file(helper_path("libabuselib.so"), library);
    constexpr int kNames = POSIX_TRACE_USDT_MAX_OBJECTS + 100; // one file, many names
    for (int i = 1; i < kNames; ++i)
        REQUIRE(link(library.c_str(), (dir / ("lib" + std::to_string(i) + ".so")).c_str()) == 0);
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        for (int i = 0; i < kNames; ++i) {
            int fd = open((dir / ("lib" + std::to_string(i) + ".so")).c_str(), O_RDONLY);
            if (fd < 0 ||
                mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
                _exit(1);
            close(fd);
        }
        char byte = 1;
        if (write(ready[1], &byte, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char byte = 0;
    bool mapped = read(ready[0], &byte, 1) == 1;
    close(ready[0]);

    trace_id_t trid;
    size_t attached = 0, objects = 0;
    int first_error = 0;
    if (mapped && posix_trace_create(child, nullptr, &trid) == 0) {
        CHECK(posix_trace_usdt_attach(trid, "abuselib:fire", &attached) == 0);
        CHECK(posix_trace_usdt_unattached(trid, &objects, &first_error) == 0);
        CHECK(posix_trace_shutdown(trid) == 0);
    }
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    REQUIRE(mapped);
    CHECK(attached == 1); // the one file, seen under its first names
    CHECK(objects == 1);
    CHECK(first_error == ENOSPC);
}
