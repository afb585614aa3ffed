// POSIX: on exec, the process's trace streams are shut down. Their
// descriptors are close-on-exec, so the kernel frees the programs, rings and
// slot; what it cannot do is write the events still in a stream to its log.
// The exec calls of libc are wrapped for that: each brings every log up to
// date, then execs. An exec that fails leaves the streams running.
// (libc's internal calls to execve, from system() or posix_spawn, run in a
// child, which owns no stream.)
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <vector>

#include "stream/stream_table.hpp"
#include "util/export.hpp"

namespace {

template <typename Function> Function next_definition(const char *name)
{
    return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

void flush_logs()
{
    int saved = errno;
    posixtrace::StreamTable::instance().flush_logs_before_exec();
    errno = saved;
}

// The arguments of an execl* call after `first`, up to its NULL; `envp` is
// read after the NULL when asked for (execle).
std::vector<char *> collect_arguments(const char *first, va_list arguments, char ***envp)
{
    std::vector<char *> argv;
    for (char *argument = const_cast<char *>(first); argument; argument = va_arg(arguments, char *))
        argv.push_back(argument);
    argv.push_back(nullptr);
    if (envp)
        *envp = va_arg(arguments, char **);
    return argv;
}

} // namespace

POSIXTRACE_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    static auto real =
        next_definition<int (*)(const char *, char *const[], char *const[])>("execve");
    flush_logs();
    return real(path, argv, envp);
}

POSIXTRACE_EXPORT int execv(const char *path, char *const argv[])
{
    static auto real = next_definition<int (*)(const char *, char *const[])>("execv");
    flush_logs();
    return real(path, argv);
}

POSIXTRACE_EXPORT int execvp(const char *file, char *const argv[])
{
    static auto real = next_definition<int (*)(const char *, char *const[])>("execvp");
    flush_logs();
    return real(file, argv);
}

POSIXTRACE_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static auto real =
        next_definition<int (*)(const char *, char *const[], char *const[])>("execvpe");
    flush_logs();
    return real(file, argv, envp);
}

POSIXTRACE_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    static auto real = next_definition<int (*)(int, char *const[], char *const[])>("fexecve");
    flush_logs();
    return real(fd, argv, envp);
}

POSIXTRACE_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                               int flags)
{
    static auto real =
        next_definition<int (*)(int, const char *, char *const[], char *const[], int)>("execveat");
    flush_logs();
    return real(dirfd, path, argv, envp, flags);
}

POSIXTRACE_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list arguments;
    va_start(arguments, arg);
    std::vector<char *> argv = collect_arguments(arg, arguments, nullptr);
    va_end(arguments);
    return execv(path, argv.data());
}

POSIXTRACE_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list arguments;
    va_start(arguments, arg);
    std::vector<char *> argv = collect_arguments(arg, arguments, nullptr);
    va_end(arguments);
    return execvp(file, argv.data());
}

POSIXTRACE_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list arguments;
    va_start(arguments, arg);
    char **envp = nullptr;
    std::vector<char *> argv = collect_arguments(arg, arguments, &envp);
    va_end(arguments);
    return execve(path, argv.data(), envp);
}
