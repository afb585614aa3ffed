/* Prints the descriptors this program was started with, one a line: its
 * number and what it links to. A test execs it to see which descriptors
 * crossed the exec. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    DIR *listing = opendir("/proc/self/fd");
    if (!listing)
        return 1;
    for (struct dirent *entry; (entry = readdir(listing));) {
        int fd = atoi(entry->d_name);
        if (entry->d_name[0] == '.' || fd == dirfd(listing))
            continue;
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t length = readlink(link, target, sizeof target - 1);
        target[length < 0 ? 0 : length] = '\0';
        printf("%d %s\n", fd, target);
    }
    closedir(listing);
    return 0;
}
