// Running the posixtrace CLI (and other commands) from the tests, as a user
// would: the output, the error output and the exit status.
#pragma once
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace cli_support {

struct Run {
    int status = -1;
    std::string out;
    std::string err;
    std::vector<std::string> lines() const
    {
        std::vector<std::string> all;
        std::istringstream stream(out);
        for (std::string line; std::getline(stream, line);)
            all.push_back(line);
        return all;
    }
    size_t err_lines() const { return size_t(std::count(err.begin(), err.end(), '\n')); }
};

// A summary line's losses ("N lost", "N lost (K switches not reported by the
// kernel)") are all context switches the kernel made without reporting them
// (this happens on some kernels, and no tracer can record those): the tracer
// itself lost nothing.
inline bool lost_only_unreported_switches(const std::string &summary)
{
    static const std::regex lost(R"((\d+) lost( \((\d+) switches not reported by the kernel\))?)");
    std::smatch match;
    if (!std::regex_search(summary, match, lost))
        return false;
    return match[1] == "0" || (match[3].matched && match[3] == match[1]);
}

// An empty file /tmp/posixtrace-STEM-XXXXXX, for a command to write.
inline std::string temp_path(const char *stem)
{
    char path[64];
    std::snprintf(path, sizeof path, "/tmp/posixtrace-%s-XXXXXX", stem);
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    return path;
}

// Runs a shell command line; standard error is collected apart.
inline Run run_shell(const std::string &command)
{
    char err_path[] = "/tmp/posixtrace-cli-err-XXXXXX";
    int fd = mkstemp(err_path);
    REQUIRE(fd >= 0);
    close(fd);
    FILE *pipe = popen((command + " 2>" + err_path).c_str(), "r");
    REQUIRE(pipe != nullptr);
    Run run;
    char buffer[65536];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
        run.out.append(buffer, n);
    int status = pclose(pipe);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    run.err.assign(std::istreambuf_iterator<char>(err), {});
    unlink(err_path);
    // Shown with the next assertion: a failing command says why.
    if (run.status != 0)
        UNSCOPED_INFO("`" << command << "` exited with " << run.status
                          << "; its errors: " << run.err);
    return run;
}

// The CLI built next to this test binary (build/tests -> build/bin).
inline std::string cli_path()
{
    char self[4096] = {};
    REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
    std::string path(self);
    return path.substr(0, path.rfind('/')) + "/../bin/posixtrace";
}

inline Run run_cli(const std::string &arguments)
{
    return run_shell(cli_path() + " " + arguments);
}

} // namespace cli_support
