#include "usdt/pending_libraries.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "usdt/probe_attacher.hpp"
#include "usdt/usdt_notes.hpp"
#include "util/process_files.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace {
namespace {

constexpr int kListTimeoutMs = 2000;

bool trusted_program(const std::string &path)
{
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
           (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// The variables of the process's environment that steer library lookup.
std::vector<std::string> lookup_environment(pid_t pid)
{
    std::ifstream file("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::vector<std::string> kept;
    std::istringstream entries(all);
    std::string entry;
    while (std::getline(entries, entry, '\0'))
        if (entry.rfind("LD_LIBRARY_PATH=", 0) == 0 || entry.rfind("LD_PRELOAD=", 0) == 0)
            kept.push_back(entry);
    return kept;
}

// Runs `argv` with `environment`, returns its standard output (bounded in
// time: a linker that does not finish is killed).
std::string output_of(const std::vector<std::string> &argv, const std::vector<std::string> &environment)
{
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0)
        return {};
    UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char *> args, env;
    for (const auto &word : argv)
        args.push_back(const_cast<char *>(word.c_str()));
    args.push_back(nullptr);
    for (const auto &entry : environment)
        env.push_back(const_cast<char *>(entry.c_str()));
    env.push_back(nullptr);
    pid_t child = 0;
    int err = posix_spawn(&child, args[0], &actions, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    write_end.reset();
    if (err != 0)
        return {};
    std::string output;
    char buffer[4096];
    for (;;) {
        pollfd readable{read_end.get(), POLLIN, 0};
        if (poll(&readable, 1, kListTimeoutMs) <= 0) {
            kill(child, SIGKILL);
            output.clear();
            break;
        }
        ssize_t n = read(read_end.get(), buffer, sizeof buffer);
        if (n <= 0)
            break;
        output.append(buffer, size_t(n));
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? output : std::string();
}

// "\tlibfoo.so.1 => /usr/lib/libfoo.so.1 (0x...)" or "\t/lib64/ld-linux-x86-64.so.2 (0x...)"
std::vector<std::string> paths_in_listing(const std::string &listing)
{
    std::vector<std::string> paths;
    std::istringstream lines(listing);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string word, path;
        while (words >> word)
            if (word[0] == '/' && path.empty())
                path = word;
        char resolved[PATH_MAX];
        if (!path.empty() && realpath(path.c_str(), resolved))
            paths.emplace_back(resolved); // as /proc/PID/maps will name it
    }
    return paths;
}

bool in_our_mount_namespace(const std::string &proc)
{
    struct stat theirs, ours;
    return stat((proc + "/ns/mnt").c_str(), &theirs) == 0 && stat("/proc/self/ns/mnt", &ours) == 0 &&
           theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev;
}

} // namespace

std::vector<std::string> pending_libraries(pid_t pid)
{
    std::string proc = "/proc/" + std::to_string(pid);
    char root[PATH_MAX], exe[PATH_MAX];
    ssize_t root_length = readlink((proc + "/root").c_str(), root, sizeof root - 1);
    ssize_t exe_length = readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
    if (root_length != 1 || root[0] != '/' || exe_length <= 0 || !in_our_mount_namespace(proc))
        return {}; // another root: its linker's view is not ours
    std::string interpreter = interpreter_of(proc + "/exe");
    // Only the executable and its dynamic linker mapped: held before start-up.
    if (interpreter.empty() || list_mapped_executables(pid).size() > 2 ||
        !trusted_program(interpreter))
        return {};
    return paths_in_listing(output_of({interpreter, "--list", std::string(exe, size_t(exe_length))},
                                      lookup_environment(pid)));
}

} // namespace posixtrace
