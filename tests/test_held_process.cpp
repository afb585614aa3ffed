// A process held at its exec, before its dynamic linker ran: the tracer
// works out the libraries it is about to load by reading files, and runs
// nothing the process chose, whatever its PT_INTERP and environment say.
#include <catch2/catch.hpp>
#include <elf.h>
#include <link.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "test_support.hpp"
#include "usdt/library_search.hpp"
#include "usdt/pending_libraries.hpp"
#include "util/process_files.hpp"

using namespace cli_support;
using namespace test_support;

namespace {

// A child stopped at the exec of `argv` with `environment` (PTRACE_TRACEME),
// as a debugger holds it; killed and reaped when it goes.
class HeldAtExec {
public:
    HeldAtExec(std::vector<std::string> argv, std::vector<std::string> environment)
    {
        // Built before the fork: the child of a threaded process may not
        // allocate (another thread may have held the allocator's lock).
        std::vector<char *> args, env;
        for (auto &word : argv)
            args.push_back(word.data());
        args.push_back(nullptr);
        for (auto &entry : environment)
            env.push_back(entry.data());
        env.push_back(nullptr);
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
            execve(args[0], args.data(), env.data());
            _exit(127);
        }
        int status = 0;
        REQUIRE(waitpid(pid_, &status, 0) == pid_);
        REQUIRE(WIFSTOPPED(status));
    }
    HeldAtExec(const HeldAtExec &) = delete;
    HeldAtExec &operator=(const HeldAtExec &) = delete;
    ~HeldAtExec()
    {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    pid_t pid() const { return pid_; }
    void release() { REQUIRE(ptrace(PTRACE_DETACH, pid_, nullptr, nullptr) == 0); }

private:
    pid_t pid_ = -1;
};

struct FileKey {
    dev_t device;
    ino_t inode;
    auto operator<=>(const FileKey &) const = default;
};

FileKey key_of_fd(int fd)
{
    struct stat st {};
    REQUIRE(fstat(fd, &st) == 0);
    return {st.st_dev, st.st_ino};
}

// Under AddressSanitizer the helpers are instrumented too, and its runtime
// must come first of what is loaded: "PATH " of the one this process
// runs with, or "".
std::string sanitizer_runtime()
{
    std::string found;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            std::string name = info->dlpi_name ? info->dlpi_name : "";
            if (name.find("/libasan.so") != std::string::npos)
                *static_cast<std::string *>(data) = name + " ";
            return 0;
        },
        &found);
    return found;
}

bool exists(const std::string &path)
{
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

} // namespace

TEST_CASE("held process: a PT_INTERP naming another program is never run, with the process's "
          "LD_PRELOAD or otherwise",
          "[held][hostile]")
{
    // The preloaded library leaves LIBRARY.ran if its code runs anywhere;
    // the flooding one then writes to its output for ever.
    auto [interpreter, library] =
        GENERATE(table<std::string, std::string>({{"interpreter_env", "libpreload_marker.so"},
                                                  {"interpreter_yes", "libpreload_marker.so"},
                                                  {"interpreter_env", "libpreload_flood.so"}}));
    std::string marker = helper_path(library.c_str()) + ".ran";
    unlink(marker.c_str());
    HeldAtExec held({helper_path(interpreter.c_str())},
                    {"LD_PRELOAD=" + helper_path(library.c_str())});
    INFO(interpreter << " with " << library);

    auto started = std::chrono::steady_clock::now();
    // `timeout`: a tracer reading an endless output would never end.
    Run run = run_shell("timeout -s KILL 30 " + cli_path() + " record -p " +
                        std::to_string(held.pid()) + " --duration 1 -o /dev/null");
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(run.status == 0);
    CHECK(seconds < 10);
    CHECK_FALSE(exists(marker)); // the library's constructor never ran
    unlink(marker.c_str());
}

TEST_CASE("held process: the libraries it is about to load are found by reading files, as its "
          "linker then maps them",
          "[held]")
{
    // RUNPATH with $ORIGIN (libposixtrace), ld.so.cache (libc), LD_PRELOAD.
    // LD_PRELOAD after another variable: the environment is read whole.
    HeldAtExec held({helper_path("late_names"), "held", "3000"},
                    {"POSIXTRACE_PADDING=1",
                     "LD_PRELOAD=" + sanitizer_runtime() + helper_path("libplainlib.so")});
    std::set<FileKey> predicted;
    std::string names;
    for (const auto &path : posixtrace::pending_libraries(held.pid())) {
        auto file = posixtrace::open_in_root(held.pid(), path);
        REQUIRE(file);
        predicted.insert(key_of_fd(file->fd.get()));
        names += "predicted: " + path + "\n";
    }
    REQUIRE_FALSE(predicted.empty());

    held.release();
    // Started: its libraries are mapped once it sleeps in main.
    std::string stat_path = "/proc/" + std::to_string(held.pid()) + "/stat";
    for (int i = 0; i < 200; ++i) {
        auto mapped = posixtrace::list_mapped_executables(held.pid());
        bool has_library = std::any_of(mapped.begin(), mapped.end(), [](const auto &m) {
            return m.name.find("libposixtrace.so") != std::string::npos;
        });
        std::ifstream stat(stat_path);
        std::string text((std::istreambuf_iterator<char>(stat)), {});
        if (has_library && text.find(") S ") != std::string::npos)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::set<FileKey> mapped;
    auto files = posixtrace::open_mapped_executables(held.pid());
    REQUIRE(files.size() > 2);
    // Less the executable and its linker, mapped before the linker ran.
    for (size_t i = 0; i < files.size(); ++i) {
        FileKey key = key_of_fd(files[i].fd.get());
        if (i > 0 && files[i].name.find("/ld-linux") == std::string::npos) {
            mapped.insert(key);
            names += "mapped: " + files[i].name + "\n";
        }
    }
    INFO(names);
    CHECK(predicted == mapped);
}

TEST_CASE("held process: a crafted environment costs the library search a bounded time",
          "[held][hostile]")
{
    // 20,000 preloaded names, none to be found, each looked for in 40,000
    // directories: without a bound, 800 million files to try.
    std::string preloads = "LD_PRELOAD=", directories = "LD_LIBRARY_PATH=";
    for (int i = 0; i < 20000; ++i)
        preloads += "m" + std::to_string(i) + " ";
    for (int i = 0; i < 40000; ++i)
        directories += "/d:";
    HeldAtExec held({helper_path("late_names"), "held", "3000"}, {directories, preloads});
    auto finished = test_support::in_child_within(std::chrono::seconds(10), [&] {
        posixtrace::pending_libraries(held.pid());
        return 0;
    });
    CHECK(finished == std::optional<int>(0));
}

TEST_CASE("held process: a crafted ld.so.cache is read in bounded time", "[held][hostile]")
{
    // 400,000 entries whose names all point into 6 MB without a NUL: a
    // parser that looks for each string's end to the end of the file reads
    // terabytes.
    constexpr uint32_t kEntries = 400000;
    constexpr size_t kHeader = 48, kEntry = 24, kRun = 6 << 20;
    std::string image(kHeader + kEntries * kEntry + kRun, 'x');
    std::memcpy(image.data(), "glibc-ld.so.cache1.1", 20);
    std::memcpy(image.data() + 20, &kEntries, 4);
    const uint32_t run = uint32_t(kHeader + kEntries * kEntry);
    for (uint32_t i = 0; i < kEntries; ++i) {
        char *entry = image.data() + kHeader + i * kEntry;
        const int32_t flags = 0x0303; // x86-64 libc6
        const uint64_t hwcap = 0;
        std::memcpy(entry, &flags, 4);
        std::memcpy(entry + 4, &run, 4);
        std::memcpy(entry + 8, &run, 4);
        std::memcpy(entry + 16, &hwcap, 8);
    }
    auto finished = test_support::in_child_within(std::chrono::seconds(5), [&] {
        return int(posixtrace::LibraryCache::parse(image, EM_X86_64).size());
    });
    CHECK(finished == std::optional<int>(0)); // in time, and nothing taken from it
}
