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

// Every log written out, then libc's own `name` (the definition after ours)
// called; -1 with ENOSYS if this libc has none.
template <typename... Args> int flush_logs_then(const char *name, Args... args)
{
    auto real = reinterpret_cast<int (*)(Args...)>(dlsym(RTLD_NEXT, name));
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int saved = errno;
    posixtrace::StreamTable::instance().flush_logs_before_exec();
    errno = saved;
    return real(args...);
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
    return flush_logs_then("execve", path, argv, envp);
}

POSIXTRACE_EXPORT int execv(const char *path, char *const argv[])
{
    return flush_logs_then("execv", path, argv);
}

POSIXTRACE_EXPORT int execvp(const char *file, char *const argv[])
{
    return flush_logs_then("execvp", file, argv);
}

POSIXTRACE_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return flush_logs_then("execvpe", file, argv, envp);
}

POSIXTRACE_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    return flush_logs_then("fexecve", fd, argv, envp);
}

POSIXTRACE_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                               int flags)
{
    return flush_logs_then("execveat", dirfd, path, argv, envp, flags);
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
