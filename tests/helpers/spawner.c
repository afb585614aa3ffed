/* A traced parent for the inheritance tests. It fires spawner:started, says
 * "ready", waits for a line, then
 *   spawner fork N       forks a child that fires spawner:child N times
 *   spawner exec PATH..  forks a child that execs PATH with its arguments
 * waits for the child, says "child exited STATUS", waits for a line, exits.
 * Lines are read a byte at a time: an exec'd child reads the same stdin. */
#include <posix_trace/usdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int wait_for_line(void)
{
    char c;
    while (read(0, &c, 1) == 1)
        if (c == '\n')
            return 0;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    POSIX_TRACE_USDT(spawner, started, getpid());
    printf("ready\n");
    fflush(stdout);
    if (wait_for_line() != 0)
        return 1;
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        if (strcmp(argv[1], "fork") == 0) {
            long count = strtol(argv[2], NULL, 10);
            for (long i = 0; i < count; ++i)
                POSIX_TRACE_USDT(spawner, child, i);
            _exit(0);
        }
        execv(argv[2], argv + 2);
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    fflush(stdout);
    return wait_for_line() == 0 ? 0 : 1;
}
