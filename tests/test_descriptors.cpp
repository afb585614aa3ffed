// Every descriptor the library and the CLI open is close-on-exec: a program
// that a thread of a traced or tracing process execs inherits none of the
// tracer's files, and none of a traced process's /proc files (its maps say
// its layout, which a privilege change at exec must not hand on).
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../userspace/lib/util/text_file.hpp"
#include "test_support.hpp"

using namespace test_support;

namespace {

// "FD TARGET" for each descriptor above stderr that a program this process
// execs now starts with.
std::set<std::string> descriptors_crossing_exec()
{
    std::string helper = helper_path("list_fds");
    int output[2];
    REQUIRE(pipe2(output, O_CLOEXEC) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        dup2(output[1], STDOUT_FILENO);
        execl(helper.c_str(), helper.c_str(), static_cast<char *>(nullptr));
        _exit(127);
    }
    close(output[1]);
    std::string listing;
    char chunk[4096];
    for (ssize_t got; (got = read(output[0], chunk, sizeof chunk)) > 0;)
        listing.append(chunk, size_t(got));
    close(output[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);

    std::set<std::string> descriptors;
    std::istringstream lines(listing);
    for (std::string line; std::getline(lines, line);)
        if (std::stoi(line) > STDERR_FILENO)
            descriptors.insert(line);
    return descriptors;
}

std::string source_text(const std::filesystem::path &path)
{
    std::string text = posixtrace::read_text_file(path, 1 << 20).value_or("");
    REQUIRE(!text.empty());
    return text;
}

// `text` with its comments blanked out (string and character literals kept).
std::string without_comments(const std::string &text)
{
    std::string code = text;
    char quote = 0;
    for (size_t i = 0; i < code.size(); ++i) {
        if (quote) {
            if (code[i] == '\\')
                ++i;
            else if (code[i] == quote)
                quote = 0;
        } else if (code[i] == '"' || code[i] == '\'') {
            quote = code[i];
        } else if (code.compare(i, 2, "//") == 0) {
            for (; i < code.size() && code[i] != '\n'; ++i)
                code[i] = ' ';
        } else if (code.compare(i, 2, "/*") == 0) {
            size_t end = std::min(code.find("*/", i + 2), code.size() - 2) + 2;
            for (; i < end; ++i)
                code[i] = code[i] == '\n' ? '\n' : ' ';
        }
    }
    return code;
}

bool is_identifier_char(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The arguments of each call of `function` in `code`, as written.
std::vector<std::string> arguments_of_calls(const std::string &code, const std::string &function)
{
    std::vector<std::string> calls;
    std::string opening = function + "(";
    for (size_t at = code.find(opening); at != std::string::npos; at = code.find(opening, at + 1)) {
        if (at > 0 && is_identifier_char(code[at - 1]))
            continue;
        size_t start = at + opening.size(), end = start;
        for (int depth = 1; end < code.size() && depth > 0; ++end)
            depth += code[end] == '(' ? 1 : code[end] == ')' ? -1 : 0;
        calls.push_back(code.substr(start, end - start - 1));
    }
    return calls;
}

// A call that makes a descriptor, and what its arguments must say for it to
// be close-on-exec; "" for a call that cannot say it (use the one named).
struct DescriptorCall {
    const char *function;
    const char *close_on_exec;
};

constexpr DescriptorCall kDescriptorCalls[] = {
    {"pipe", ""}, // pipe2(..., O_CLOEXEC)
    {"pipe2", "O_CLOEXEC"},
    {"dup", ""}, // fcntl(F_DUPFD_CLOEXEC)
    {"dup2", ""},
    {"dup3", "O_CLOEXEC"},
    {"socket", "SOCK_CLOEXEC"},
    {"socketpair", "SOCK_CLOEXEC"},
    {"accept", ""}, // accept4(..., SOCK_CLOEXEC)
    {"accept4", "SOCK_CLOEXEC"},
    {"memfd_create", "MFD_CLOEXEC"},
    {"eventfd", "EFD_CLOEXEC"},
    {"epoll_create", ""}, // epoll_create1(EPOLL_CLOEXEC)
    {"epoll_create1", "EPOLL_CLOEXEC"},
    {"timerfd_create", "TFD_CLOEXEC"},
    {"signalfd", "SFD_CLOEXEC"},
    {"inotify_init", ""},
    {"inotify_init1", "IN_CLOEXEC"},
    {"mkstemp", ""}, // mkostemp(..., O_CLOEXEC)
    {"mkostemp", "O_CLOEXEC"},
    {"tmpfile", ""},
    {"fopen", "e\""}, // the mode, as a literal
    {"popen", "e\""},
};

bool opens_a_file(const std::string &arguments)
{
    for (const char *access : {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_PATH"})
        if (arguments.find(access) != std::string::npos)
            return true;
    return false;
}

// What each openat2(2) of `code` is asked for (how.flags = ...;).
std::vector<std::string> openat2_flags(const std::string &code)
{
    std::vector<std::string> assignments;
    for (size_t at = code.find(".flags ="); at != std::string::npos;
         at = code.find(".flags =", at + 1)) {
        std::string assignment = code.substr(at, code.find(';', at) - at);
        if (opens_a_file(assignment))
            assignments.push_back(assignment);
    }
    return assignments;
}

// What in `code` makes a descriptor that an exec would hand on.
std::vector<std::string> inheritable_descriptors(const std::string &code)
{
    std::vector<std::string> found;
    if (code.find("fstream") != std::string::npos)
        found.push_back("a C++ file stream (it opens without O_CLOEXEC)");
    for (const auto &call : kDescriptorCalls)
        for (const std::string &arguments : arguments_of_calls(code, call.function))
            if (!*call.close_on_exec || arguments.find(call.close_on_exec) == std::string::npos)
                found.push_back(std::string(call.function) + "(" + arguments + ")");
    for (const char *function : {"open", "openat"})
        for (const std::string &arguments : arguments_of_calls(code, function))
            if (opens_a_file(arguments) && arguments.find("O_CLOEXEC") == std::string::npos)
                found.push_back(std::string(function) + "(" + arguments + ")");
    for (const std::string &flags : openat2_flags(code))
        if (flags.find("O_CLOEXEC") == std::string::npos)
            found.push_back("openat2 flags" + flags);
    if (code.find("F_DUPFD,") != std::string::npos)
        found.push_back("fcntl(F_DUPFD) (F_DUPFD_CLOEXEC is)");
    return found;
}

} // namespace

TEST_CASE("descriptors: the sources make every descriptor close-on-exec",
          "[descriptors][self-tracing]")
{
    const std::filesystem::path tree(POSIXTRACE_SOURCE_DIR);
    size_t files = 0;
    for (const auto &entry : std::filesystem::recursive_directory_iterator(tree / "userspace")) {
        std::string relative = entry.path().lexically_relative(tree).string();
        std::string extension = entry.path().extension().string();
        if (!entry.is_regular_file() || (extension != ".cpp" && extension != ".hpp"))
            continue;
        ++files;
        for (const std::string &finding :
             inheritable_descriptors(without_comments(source_text(entry.path()))))
            FAIL_CHECK(relative << ": " << finding);
    }
    CHECK(files > 50);
}

TEST_CASE("descriptors: the source check finds what an exec would hand on",
          "[descriptors][self-tracing]")
{
    CHECK(inheritable_descriptors("std::ifstream maps(path);").size() == 1);
    CHECK(inheritable_descriptors("int fd = open(path, O_RDONLY);").size() == 1);
    CHECK(inheritable_descriptors("UniqueFd fd(::open(p, O_RDONLY | O_CLOEXEC));").empty());
    CHECK(inheritable_descriptors("how.flags = O_RDONLY | O_NOCTTY;").size() == 1);
    CHECK(inheritable_descriptors("std::fopen(path, \"w\");").size() == 1);
    CHECK(inheritable_descriptors("std::fopen(path, \"we\");").empty());
    CHECK(inheritable_descriptors("pipe(fds);").size() == 1);
    CHECK(inheritable_descriptors("pipe2(fds, O_CLOEXEC);").empty());
    CHECK(inheritable_descriptors("eventfd(0, EFD_NONBLOCK);").size() == 1);
    CHECK(inheritable_descriptors("LogReader::open(fd, reader);").empty());
    CHECK(inheritable_descriptors(without_comments("x(); // open(p, O_RDONLY)")).empty());
    CHECK(inheritable_descriptors("addopen(&actions, 2, \"/dev/null\", O_WRONLY, 0);").empty());
}

TEST_CASE("descriptors: a file read line by line is not open in a program execed meanwhile",
          "[descriptors][self-tracing]")
{
    std::string maps = "/proc/" + std::to_string(getpid()) + "/maps";
    size_t lines = 0;
    bool read = posixtrace::for_each_line(maps, [&](std::string_view) {
        if (lines++ > 0)
            return true;
        for (const std::string &descriptor : descriptors_crossing_exec())
            CHECK(descriptor.find(maps) == std::string::npos);
        return true;
    });
    CHECK(read);
    CHECK(lines > 1);
}

TEST_CASE("descriptors: a program execed by a traced process inherits nothing of its stream",
          "[descriptors][self-tracing]")
{
    std::set<std::string> before = descriptors_crossing_exec();
    StreamGuard stream = make_stream();
    filter_thread_events(stream.get());
    trace_event_id_t mark = user_event("descriptors.mark");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    posix_trace_event(mark, nullptr, 0);
    // The drain has merged the rings and followed the process up to the mark.
    ReadResult started = get_next(stream.get(), GetNext::Block);
    REQUIRE(started.err == 0);
    CHECK(started.info.posix_event_id == POSIX_TRACE_START);
    ReadResult marked = get_next(stream.get(), GetNext::Block);
    REQUIRE(marked.err == 0);
    REQUIRE(marked.info.posix_event_id == mark);

    std::set<std::string> after = descriptors_crossing_exec();
    for (const std::string &descriptor : after)
        CHECK(before.count(descriptor) == 1);
}
