// POSIX: on exec, the process's trace streams are shut down. Their
// descriptors are close-on-exec, so the kernel frees the programs, rings and
// slot; what it cannot do is write the events still in a stream to its log.
// The exec calls of libc are wrapped for that: each brings every log up to
// date, then execs. An exec that fails leaves the streams running.
// (libc's internal calls to execve, from system() or posix_spawn, run in a
// child, which owns no stream.)
//
// POSIX lets a signal handler exec (execl, execle, execv, execve, fexecve
// are async-signal-safe). A wrapper calls nothing but libc's own exec, found
// when the library was loaded, and getpid(), unless this process owns a
// stream with a log. Then it writes the logs out first, which takes the
// streams' locks and allocates; except in a signal handler whose thread was
// interrupted holding or taking a stream's lock: that handler would wait for
// it for ever, so it execs at once and the events not yet in the logs are
// lost with the streams. (A handler that interrupted malloc or another lock
// of its thread while this process writes a log can still block: write no
// log, or exec from no such handler.)
#include <alloca.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>

#include "stream/stream_table.hpp"
#include "util/export.hpp"
#include "util/tracked_mutex.hpp"

namespace {

using Argv = char *const[];

// libc's exec calls (the definitions after ours), found at load: dlsym
// takes the dynamic linker's lock, which a signal handler must not.
struct LibcExecs {
    int (*execve)(const char *, Argv, Argv);
    int (*execv)(const char *, Argv);
    int (*execvp)(const char *, Argv);
    int (*execvpe)(const char *, Argv, Argv);
    int (*fexecve)(int, Argv, Argv);
    int (*execveat)(int, const char *, Argv, Argv, int);
};
LibcExecs libc_execs;

template <typename Function> void find_in_libc(Function *&function, const char *name)
{
    function = reinterpret_cast<Function *>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor)) void find_libc_execs()
{
    find_in_libc(libc_execs.execve, "execve");
    find_in_libc(libc_execs.execv, "execv");
    find_in_libc(libc_execs.execvp, "execvp");
    find_in_libc(libc_execs.execvpe, "execvpe");
    find_in_libc(libc_execs.fexecve, "fexecve");
    find_in_libc(libc_execs.execveat, "execveat");
}

// Every log written out (see above for when not), then libc's `real`, its
// `name`, called; -1 with ENOSYS if this libc has none. (Found now if an
// exec comes from a constructor that ran before the library's.)
template <typename... Args>
int flush_logs_then(int (*real)(Args...), const char *name, Args... args)
{
    if (!real)
        find_in_libc(real, name);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (posixtrace::StreamTable::logs_to_write_before_exec() &&
        !posixtrace::TrackedMutex::held_by_this_thread()) {
        int saved = errno;
        posixtrace::StreamTable::instance().flush_logs_before_exec();
        errno = saved;
    }
    return real(args...);
}

// How many arguments an execl* call passes from `first` up to its NULL.
size_t count_arguments(const char *first, va_list arguments)
{
    va_list counted;
    va_copy(counted, arguments);
    size_t count = 0;
    for (const char *argument = first; argument; argument = va_arg(counted, const char *))
        ++count;
    va_end(counted);
    return count;
}

// Those arguments and their NULL into `argv` (count_arguments() + 1 entries);
// `envp` read after the NULL when asked for (execle).
void collect_arguments(const char *first, va_list arguments, char **argv, char ***envp)
{
    size_t at = 0;
    for (char *argument = const_cast<char *>(first); argument; argument = va_arg(arguments, char *))
        argv[at++] = argument;
    argv[at] = nullptr;
    if (envp)
        *envp = va_arg(arguments, char **);
}

} // namespace

POSIXTRACE_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return flush_logs_then(libc_execs.execve, "execve", path, argv, envp);
}

POSIXTRACE_EXPORT int execv(const char *path, char *const argv[])
{
    return flush_logs_then(libc_execs.execv, "execv", path, argv);
}

POSIXTRACE_EXPORT int execvp(const char *file, char *const argv[])
{
    return flush_logs_then(libc_execs.execvp, "execvp", file, argv);
}

POSIXTRACE_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return flush_logs_then(libc_execs.execvpe, "execvpe", file, argv, envp);
}

POSIXTRACE_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    return flush_logs_then(libc_execs.fexecve, "fexecve", fd, argv, envp);
}

POSIXTRACE_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                               int flags)
{
    return flush_logs_then(libc_execs.execveat, "execveat", dirfd, path, argv, envp, flags);
}

// The argument vectors of the execl* calls are on the stack, as libc's own
// are: no allocation, which a signal handler must not make.

POSIXTRACE_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list arguments;
    va_start(arguments, arg);
    auto argv =
        static_cast<char **>(alloca((count_arguments(arg, arguments) + 1) * sizeof(char *)));
    collect_arguments(arg, arguments, argv, nullptr);
    va_end(arguments);
    return execv(path, argv);
}

POSIXTRACE_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list arguments;
    va_start(arguments, arg);
    auto argv =
        static_cast<char **>(alloca((count_arguments(arg, arguments) + 1) * sizeof(char *)));
    collect_arguments(arg, arguments, argv, nullptr);
    va_end(arguments);
    return execvp(file, argv);
}

POSIXTRACE_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list arguments;
    va_start(arguments, arg);
    auto argv =
        static_cast<char **>(alloca((count_arguments(arg, arguments) + 1) * sizeof(char *)));
    char **envp = nullptr;
    collect_arguments(arg, arguments, argv, &envp);
    va_end(arguments);
    return execve(path, argv, envp);
}
