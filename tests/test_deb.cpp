// make deb: the package installs with dpkg -i, the README's example builds
// against it with pkg-config and runs, the CLI runs, and dpkg -r removes it.
// It changes the machine (files under /usr), as a user's install would, and
// takes them away at the end; a machine that has the package installed
// already is left alone.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_support.hpp"
#include "test_support.hpp"

using namespace cli_support;

namespace {

const std::string kSource = POSIXTRACE_SOURCE_DIR;

// The build directory of this test binary (build/tests/.. : build).
std::string build_dir()
{
    std::string cli = cli_path(); // BUILD/tests/../bin/posixtrace
    return std::filesystem::canonical(cli).parent_path().parent_path().string();
}

// The first ```c block of the README: the example a newcomer copies.
std::string readme_example()
{
    std::ifstream readme(kSource + "/README.md");
    std::string line, code;
    bool inside = false;
    while (std::getline(readme, line)) {
        if (!inside && line == "```c") {
            inside = true;
        } else if (inside && line == "```") {
            return code;
        } else if (inside) {
            code += line + "\n";
        }
    }
    return "";
}

// Removes the package at the end of the test, whatever happened.
struct Installed {
    ~Installed() { run_shell("dpkg -r posixtrace > /dev/null 2>&1"); }
};

} // namespace

TEST_CASE("deb: make deb builds a package that installs, builds the README's example with "
          "pkg-config, runs it and the CLI, and removes",
          "[deb]")
{
#if defined(__SANITIZE_ADDRESS__)
    SUCCEED("a sanitizer build is not what a package ships: the release pass tests it");
    return;
#endif
    REQUIRE(run_shell("dpkg-query -W -f='${Status}' posixtrace 2>/dev/null | grep -q installed")
                .status != 0); // a user's install of it is not to be replaced by a test
    Run made = run_shell("make --no-print-directory -C " + kSource + " deb BUILD=" + build_dir());
    INFO(made.out << made.err);
    REQUIRE(made.status == 0);
    REQUIRE(!made.lines().empty());
    std::string package = made.lines().back();
    REQUIRE(std::filesystem::exists(package));

    std::string depends = run_shell("dpkg-deb -f " + package + " Depends").out;
    for (const char *library : {"libbpf1", "libelf1", "libcurl4", "libc6", "libstdc++6"})
        CHECK(depends.find(library) != std::string::npos);

    Installed remove_at_end;
    Run install = run_shell("dpkg -i " + package);
    INFO(install.out << install.err);
    REQUIRE(install.status == 0);
    for (const char *file :
         {"/usr/include/trace.h", "/usr/include/posix_trace/events.h",
          "/usr/lib/libposixtrace.so.1", "/usr/lib/libposixtrace.so", "/usr/lib/libposixtrace.a",
          "/usr/lib/pkgconfig/posixtrace.pc", "/usr/bin/posixtrace",
          "/usr/share/man/man1/posixtrace.1", "/usr/share/man/man3/posix_trace_get_origin.3",
          "/usr/share/posixtrace/clickhouse.sql"}) {
        INFO(file);
        CHECK(std::filesystem::exists(file));
    }

    test_support::TempDir dir;
    std::ofstream(dir / "example.c") << readme_example();
    Run built = run_shell("cd " + dir.path() +
                          " && cc example.c $(pkg-config --cflags --libs posixtrace) -o example");
    INFO(built.err);
    REQUIRE(built.status == 0);
    Run example = run_shell(dir / "example");
    CHECK(example.status == 0);
    CHECK(example.out.find("app:request (4 bytes)") != std::string::npos);
    CHECK(run_shell("ldd " + dir / "example").out.find("/usr/lib/libposixtrace.so.1") !=
          std::string::npos);
    CHECK(run_shell("/usr/bin/posixtrace --version").out == "posixtrace " POSIXTRACE_VERSION "\n");

    Run removed = run_shell("dpkg -r posixtrace");
    CHECK(removed.status == 0);
    CHECK(!std::filesystem::exists("/usr/lib/libposixtrace.so.1"));
    CHECK(!std::filesystem::exists("/usr/bin/posixtrace"));
}
