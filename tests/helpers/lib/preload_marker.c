/* A library whose constructor leaves a mark: the file LIBRARY.ran beside
 * it gets a line with the uid it ran as. Preloaded into a hostile program,
 * it shows whether anything ran the program's code, whatever environment
 * that code was given. Built with FLOOD, it then writes to its standard
 * output without end, as a hostile program would to whoever reads it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void leave_mark(void)
{
    Dl_info self;
    char path[4096], line[32];
    if (!dladdr((void *)leave_mark, &self) || !self.dli_fname)
        return;
    snprintf(path, sizeof path, "%s.ran", self.dli_fname);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    int length = snprintf(line, sizeof line, "uid %u\n", (unsigned)getuid());
    if (write(fd, line, (size_t)length) < 0)
        perror("write");
    close(fd);
#ifdef FLOOD
    static const char flood[4096] = {'x'};
    while (write(1, flood, sizeof flood) > 0)
        ;
#endif
}
