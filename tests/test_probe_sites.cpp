// Each probe site is read as its own note says: a posix_trace:event site of
// another libposixtrace build (other registers, arguments on the stack)
// gives the right ids and data, never values read from the wrong places.
#include <catch2/catch.hpp>
#include <elf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "test_support.hpp"
#include "usdt/usdt_notes.hpp"

using namespace cli_support;
using namespace test_support;

TEST_CASE("probe sites: posix_trace_event of another build is decoded by its own note",
          "[usdt][security]")
{
    // Pinned: 4@%r12d 8@%r13 8@%r14 8@%r15, the sizes libposixtrace has in
    // other registers. Unoptimised: every argument on the stack.
    auto helper =
        GENERATE(as<std::string>{}, "other_build_events_pinned", "other_build_events_unoptimised");
    INFO(helper);
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

// A copy of `library` whose .note.stapsdt section header announces `size`
// bytes at the end of the file, which is made that long (sparse: nothing
// on disk). A reader that believes the header allocates and reads it all.
std::string with_huge_notes(const std::string &library, uint64_t size)
{
    std::string copy = temp_path("huge-notes");
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
        if (std::strcmp(bytes.data() + names.sh_offset + section.sh_name, ".note.stapsdt") != 0)
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

} // namespace

namespace {

long status_kb(const char *field)
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind(field, 0) == 0)
            return std::stol(line.substr(std::strlen(field)));
    return -1;
}

} // namespace

TEST_CASE("probe sites: a sparse 8 GiB notes section is refused, not read", "[usdt][security]")
{
    std::string file = with_huge_notes(helper_path("libabuselib.so"), 8ull << 30);
    auto started = std::chrono::steady_clock::now();
    // In a child: its peak resident size, less what it had, is what the read took.
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        long before = status_kb("VmRSS:");
        std::vector<posixtrace::UsdtProbe> probes;
        int err = posixtrace::read_usdt_probes(file, probes);
        long grew = status_kb("VmHWM:") - before;
        _exit(err != ENOEXEC ? 1 : grew > 64 * 1024 ? 2 : 0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    unlink(file.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) != 1); // refused
    CHECK(WEXITSTATUS(status) != 2); // without reading it into memory
    CHECK(seconds < 1);
}
