// The files of a process in another root are the files that process sees:
// an absolute symlink it planted leads nowhere outside its root, and a
// chrooted program is traced by pid like any other (docs/security.md,
// "Paths").
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "../userspace/lib/util/process_files.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"

using namespace cli_support;
using namespace test_support;
using posixtrace::open_in_root;
using posixtrace::open_mapped_executables;

namespace {

void write_file(const std::string &path, const std::string &text)
{
    std::ofstream(path) << text;
}

std::string read_all(int fd)
{
    std::string text;
    char buffer[256];
    for (ssize_t n; (n = pread(fd, buffer, sizeof buffer, off_t(text.size()))) > 0;)
        text.append(buffer, size_t(n));
    return text;
}

// A directory to be a process's root, and the same path below /tmp on the
// host: an absolute symlink to it means one file inside that root, another
// file to a tracer that resolves it from its own root.
struct TwoRoots {
    std::string root = make_directory("chroot");
    std::string decoy = make_directory("decoy"); // "/tmp/posixtrace-decoy-XXXXXX"
    std::string inside = root + decoy;           // the same path inside the root

    TwoRoots() { REQUIRE(run_shell("mkdir -p " + inside).status == 0); }
    ~TwoRoots() { run_shell("rm -rf " + root + " " + decoy); }

    static std::string make_directory(const char *stem)
    {
        std::string path = "/tmp/posixtrace-" + std::string(stem) + "-XXXXXX";
        REQUIRE(mkdtemp(path.data()) != nullptr);
        return path;
    }
};

// A child of this process that chroots to `root` and waits to be killed.
pid_t chrooted_sleeper(const std::string &root)
{
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        char ok = chroot(root.c_str()) == 0 && chdir("/") == 0;
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char ok = 0;
    REQUIRE(read(ready[0], &ok, 1) == 1);
    close(ready[0]);
    REQUIRE(ok);
    return pid;
}

void end(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
}

} // namespace

TEST_CASE("process files: an absolute symlink resolves inside the process's root", "[security]")
{
    TwoRoots roots;
    write_file(roots.inside + "/target", "inside");
    write_file(roots.decoy + "/target", "outside");
    REQUIRE(symlink((roots.decoy + "/target").c_str(), (roots.root + "/link").c_str()) == 0);
    REQUIRE(symlink("../../../..", (roots.root + "/up").c_str()) == 0);
    REQUIRE(mkfifo((roots.root + "/fifo").c_str(), 0600) == 0);
    pid_t pid = chrooted_sleeper(roots.root);

    // What the hazard is: through /proc/PID/root the kernel resolves the
    // absolute symlink against the tracer's root.
    int naive = open(("/proc/" + std::to_string(pid) + "/root/link").c_str(), O_RDONLY);
    REQUIRE(naive >= 0);
    CHECK(read_all(naive) == "outside");
    close(naive);

    auto link = open_in_root(pid, "/link");
    REQUIRE(link);
    CHECK(read_all(link->fd.get()) == "inside");
    CHECK(link->name == "/link");
    std::ifstream by_path(link->path()); // the path others are given: the same file
    CHECK(std::string(std::istreambuf_iterator<char>(by_path), {}) == "inside");

    // ".." and relative symlinks stop at that root too.
    auto climbed = open_in_root(pid, "/../../.." + roots.decoy + "/target");
    REQUIRE(climbed);
    CHECK(read_all(climbed->fd.get()) == "inside");
    auto up = open_in_root(pid, "/up" + roots.decoy + "/target");
    REQUIRE(up);
    CHECK(read_all(up->fd.get()) == "inside");

    CHECK_FALSE(open_in_root(pid, "/fifo"));    // not a regular file: refused, no hang
    CHECK_FALSE(open_in_root(pid, "/missing")); // nothing there
    CHECK_FALSE(open_in_root(pid, ""));
    end(pid);
    CHECK_FALSE(open_in_root(pid, "/link")); // the process is gone
}

TEST_CASE("process files: a chrooted program whose library is a symlink out of its root is "
          "traced by pid",
          "[security][by_pid]")
{
    // The emitter and every library it loads, copied into a root of its own;
    // there libposixtrace is an absolute symlink whose path, on the host,
    // holds another copy that the program does not map.
    TwoRoots roots;
    std::string emitter = helper_path("user_event_emitter");
    std::string real_library =
        emitter.substr(0, emitter.rfind("/tests/")) + "/lib/libposixtrace.so.1";
    REQUIRE(run_shell("mkdir -p " + roots.root + "/bin && cp " + emitter + " " + roots.root +
                      "/bin/ && for f in $(ldd " + emitter +
                      " | grep -v libposixtrace | grep -o '/[^ ]*'); do mkdir -p " + roots.root +
                      "$(dirname $f) && cp -L $f " + roots.root + "$f; done && mkdir -p " +
                      roots.root + "/lib && cp " + real_library + " " + roots.inside + "/ && cp " +
                      real_library + " " + roots.decoy + "/")
                .status == 0);
    // Found by the emitter's RUNPATH ($ORIGIN/../../lib: /lib in that root).
    REQUIRE(symlink((roots.decoy + "/libposixtrace.so.1").c_str(),
                    (roots.root + "/lib/libposixtrace.so.1").c_str()) == 0);

    ChildConversation child({"/usr/sbin/chroot", roots.root, "/bin/user_event_emitter"});
    REQUIRE(child.read_line() == "ready\n");
    bool maps_inside = false;
    for (const auto &file : open_mapped_executables(child.pid()))
        maps_inside |= file.name == roots.inside + "/libposixtrace.so.1";
    CHECK(maps_inside); // the program runs the copy inside its root

    trace_id_t trid;
    REQUIRE(posix_trace_create(child.pid(), nullptr, &trid) == 0);
    filter_thread_events(trid);
    REQUIRE(posix_trace_start(trid) == 0);
    child.say("go\n");
    REQUIRE(child.read_line() == "done\n");
    REQUIRE(posix_trace_stop(trid) == 0);
    std::map<std::string, int> names;
    for (const auto &event : read_available(trid)) {
        char name[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(trid, event.info.posix_event_id, name) == 0);
        names[name]++;
    }
    CHECK(names["emitter.before"] == 1);
    CHECK(names["emitter.after"] == 1);
    REQUIRE(posix_trace_shutdown(trid) == 0);

    // The probes listing reads the very files mapped.
    Run probes = run_cli("probes -p " + std::to_string(child.pid()));
    CHECK(probes.status == 0);
    CHECK(probes.out.find("posix_trace:event") != std::string::npos);
    CHECK(probes.out.find(roots.inside + "/libposixtrace.so.1") != std::string::npos);
    child.say("bye\n");
}
