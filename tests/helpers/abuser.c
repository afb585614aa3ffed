/* A traced program that pushes the tracer to its limits (docs/security.md,
 * "bounded under abuse"). Every mode ends by itself; what it did is in its
 * own events, so a test reads the trace to check nothing went missing.
 *
 *   abuser names [PREFIX [NEXT]]
 *       Registers names (PREFIX, default 'n', then digits) until
 *       posix_trace_eventid_open stops giving new ids
 *       (TRACE_USER_EVENT_MAX), emits one event of each (data: its index),
 *       then fires its own posix_trace:eventid_open probe 100,000 times
 *       with forged ids outside its range and unterminated 4 KiB names, and
 *       emits one event of each name again (data: 100000 + index) and one
 *       of id 32 + TRACE_USER_EVENT_MAX + 1, which only a forged notice
 *       named. Ends with "names.done" (data: the number of names
 *       registered; unnamed, as the registry is full). With NEXT, it then
 *       forks a child that execs "abuser names NEXT" and waits for it.
 *   abuser named-execs N
 *       Registers 1,000 names of 127 bytes, then forks N children one
 *       after another, each exec'ing "abuser child K" at once and waited
 *       for. Ends with "named-execs.done" (data: N).
 *   abuser hold N
 *       Forks N children that stay alive until the last is forked, then
 *       lets them all exit. Ends with "hold.done" (data: N).
 *   abuser threads N
 *       N threads alive at once (small stacks); each emits "thread.hello"
 *       (data: its index) and waits until all have, then all end.
 *   abuser forks SECONDS [PROGRESS]
 *       Forks as fast as it can for SECONDS; every 2nd child execs this
 *       program ("abuser child K"), the others stay this image; each child
 *       emits "child.hello" (data: K) and exits. Ends with "forks.done"
 *       (data: the number of children). With PROGRESS, keeps in that file
 *       how many children it has reaped so far (a watcher waits for them
 *       rather than for a time, which hosts cover at rates ten times apart).
 *   abuser reuse DIRECTORY
 *       Copies DIRECTORY/plain.so (a library without probes) to lib.so,
 *       loads it, waits for the tracer to have read it, unloads and
 *       deletes it, and copies DIRECTORY/probed.so (one with a probe) to
 *       the same name; ext4 gives the new file the freed inode unless
 *       another file took it first: then again, up to 50 rounds. Emits
 *       "reuse.same_inode" (data: 1 if a round got it) and "reuse.rounds",
 *       loads the new file and fires its probe once every 100 ms for a
 *       second (argument: the round), then "reuse.done".
 *   abuser dlopen DIRECTORY N SECONDS
 *       Loads DIRECTORY/libabuse-0.so .. -(N-1).so (distinct files), then
 *       for SECONDS fires the abuselib:fire probe of every library once a
 *       round (argument: the round), a round each 100 ms. Ends with
 *       "dlopen.done" (data: the number of rounds).
 *   abuser truncate DIRECTORY N
 *       For each of DIRECTORY/libabuse-0.so .. -(N-1).so: loads it, fires
 *       its probe, then cuts the file to nothing 50 * INDEX us later and
 *       writes it back 2 ms after (a tracer that maps the file to read it
 *       faults).
 *       The cut discards the library's relocated pages too, so none of its
 *       code runs again: it stays loaded, and the abuser ends with _exit
 *       after "truncate.done" (data: the libraries loaded). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

static trace_event_id_t named(const char *name)
{
    trace_event_id_t id;
    if (posix_trace_eventid_open(name, &id) != 0)
        exit(2);
    return id;
}

static void emit_int(trace_event_id_t id, int value)
{
    posix_trace_event(id, &value, sizeof value);
}

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static int many_names(const char *self, char prefix, const char *next)
{
    static trace_event_id_t ids[TRACE_USER_EVENT_MAX + 1];
    int count = 0;
    for (; count <= TRACE_USER_EVENT_MAX; ++count) {
        char name[TRACE_EVENT_NAME_MAX];
        snprintf(name, sizeof name, "%c%04d.%0*d", prefix, count, TRACE_EVENT_NAME_MAX - 7, count);
        ids[count] = named(name);
        if (ids[count] == POSIX_TRACE_UNNAMED_USEREVENT)
            break;
    }
    for (int i = 0; i < count; ++i)
        emit_int(ids[i], i);
    /* A process can fire the in-band naming probe with anything. */
    static char unterminated[4096];
    memset(unterminated, 'F', sizeof unterminated);
    for (unsigned i = 0; i < 100000; ++i) {
        unsigned forged = i % 2 ? POSIX_TRACE_USER_EVENT_FIRST + TRACE_USER_EVENT_MAX + i % 70000
                                : i % POSIX_TRACE_USER_EVENT_FIRST;
        const char *name = unterminated;
        STAP_PROBE2(posix_trace, eventid_open, forged, name);
    }
    for (int i = 0; i < count; ++i)
        emit_int(ids[i], 100000 + i);
    /* An event of an id only a forged notice named. */
    emit_int(POSIX_TRACE_USER_EVENT_FIRST + TRACE_USER_EVENT_MAX + 1, count);
    emit_int(named("names.done"), count);
    if (!next)
        return 0;
    pid_t child = fork();
    if (child == 0) {
        execl(self, self, "names", next, (char *)NULL);
        _exit(3);
    }
    int status;
    return child > 0 && waitpid(child, &status, 0) == child && status == 0 ? 0 : 2;
}

struct crowd {
    pthread_mutex_t lock;
    pthread_cond_t all_in;
    int arrived, total;
    trace_event_id_t hello;
};

struct member {
    struct crowd *crowd;
    int index;
};

static void *crowd_member(void *argument)
{
    struct member *self = argument;
    struct crowd *crowd = self->crowd;
    emit_int(crowd->hello, self->index);
    pthread_mutex_lock(&crowd->lock);
    if (++crowd->arrived == crowd->total)
        pthread_cond_broadcast(&crowd->all_in);
    while (crowd->arrived < crowd->total)
        pthread_cond_wait(&crowd->all_in, &crowd->lock);
    pthread_mutex_unlock(&crowd->lock);
    return NULL;
}

static int many_threads(int total)
{
    struct crowd crowd = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, total,
                          named("thread.hello")};
    pthread_t *threads = calloc((size_t)total, sizeof *threads);
    struct member *members = calloc((size_t)total, sizeof *members);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN + 16384);
    if (!threads || !members)
        return 2;
    for (int i = 0; i < total; ++i) {
        members[i] = (struct member){&crowd, i};
        if (pthread_create(&threads[i], &attr, crowd_member, &members[i]) != 0) {
            fprintf(stderr, "abuser: thread %d: cannot create\n", i);
            return 2;
        }
    }
    for (int i = 0; i < total; ++i)
        pthread_join(threads[i], NULL);
    free(threads);
    free(members);
    return 0;
}

static int child_hello(int index)
{
    emit_int(named("child.hello"), index);
    return 0;
}

static void note_reaped(int progress, int reaped)
{
    char line[16];
    int length = snprintf(line, sizeof line, "%10d\n", reaped);
    if (progress >= 0 && pwrite(progress, line, (size_t)length, 0) != length)
        _exit(4);
}

static int fork_storm(const char *self, double seconds, const char *progress_path)
{
    trace_event_id_t hello = named("child.hello");
    int children = 0, reaped = 0;
    int progress = progress_path ? open(progress_path, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1;
    if (progress_path && progress < 0)
        return 2;
    for (double end = now_seconds() + seconds; now_seconds() < end; ++children) {
        pid_t child = fork();
        if (child < 0) {
            if (errno == EAGAIN) { /* a process limit: wait for one to go */
                --children;
                if (wait(NULL) > 0)
                    note_reaped(progress, ++reaped);
                continue;
            }
            return 2;
        }
        if (child == 0) {
            if (children % 2) {
                char index[16];
                snprintf(index, sizeof index, "%d", children);
                execl(self, self, "child", index, (char *)NULL);
                _exit(3);
            }
            emit_int(hello, children);
            _exit(0);
        }
        while (waitpid(-1, NULL, WNOHANG) > 0)
            note_reaped(progress, ++reaped);
    }
    while (wait(NULL) > 0) {
    }
    emit_int(named("forks.done"), children);
    return 0;
}

static int named_execs(const char *self, int total)
{
    for (int count = 0; count < 1000; ++count) {
        char name[TRACE_EVENT_NAME_MAX];
        snprintf(name, sizeof name, "x%04d.%0*d", count, TRACE_EVENT_NAME_MAX - 7, count);
        named(name);
    }
    for (int i = 0; i < total; ++i) {
        pid_t child = fork();
        if (child < 0)
            return 2;
        if (child == 0) {
            char index[16];
            snprintf(index, sizeof index, "%d", i);
            execl(self, self, "child", index, (char *)NULL);
            _exit(3);
        }
        if (waitpid(child, NULL, 0) != child)
            return 2;
    }
    emit_int(named("named-execs.done"), total);
    return 0;
}

static int hold_children(int total)
{
    int gate[2];
    if (pipe(gate) != 0)
        return 2;
    for (int i = 0; i < total; ++i) {
        pid_t child = fork();
        if (child < 0)
            return 2;
        if (child == 0) { /* until the parent closes the gate */
            char byte;
            close(gate[1]);
            while (read(gate[0], &byte, 1) < 0 && errno == EINTR) {
            }
            _exit(0);
        }
    }
    close(gate[1]);
    while (wait(NULL) > 0) {
    }
    emit_int(named("hold.done"), total);
    return 0;
}

static int copy_file(const char *from, const char *to)
{
    char buffer[65536];
    ssize_t got = 0;
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0755);
    while (in >= 0 && out >= 0 && (got = read(in, buffer, sizeof buffer)) > 0)
        if (write(out, buffer, (size_t)got) != got) {
            got = -1;
            break;
        }
    int failed = in < 0 || out < 0 || got < 0;
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        failed = 1;
    return failed ? -1 : 0;
}

/* One round: loads DIRECTORY/lib.so (a copy of plain.so), waits for the
 * tracer to have read it, unloads and deletes it, and copies probed.so to
 * the same name. Whether the new file got the freed inode is up to the file
 * system and to whoever else creates a file meanwhile: 1 if it did. */
static int reuse_round(const char *directory, const char *path)
{
    char plain[PATH_MAX], probed[PATH_MAX];
    struct stat before, after;
    snprintf(plain, sizeof plain, "%s/plain.so", directory);
    snprintf(probed, sizeof probed, "%s/probed.so", directory);
    if (copy_file(plain, path) != 0)
        return -1;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library || stat(path, &before) != 0)
        return -1;
    usleep(300000); /* the tracer reads it: no probes */
    dlclose(library);
    if (unlink(path) != 0 || copy_file(probed, path) != 0 || stat(path, &after) != 0)
        return -1;
    return before.st_dev == after.st_dev && before.st_ino == after.st_ino;
}

static int inode_reuse(const char *directory)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/lib.so", directory);
    int reused = 0, rounds = 0;
    while (!reused && rounds < 50) {
        ++rounds;
        if ((reused = reuse_round(directory, path)) < 0)
            return 2;
        if (!reused)
            unlink(path);
    }
    emit_int(named("reuse.same_inode"), reused);
    emit_int(named("reuse.rounds"), rounds);
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void (*fire)(int) = library ? (void (*)(int))dlsym(library, "abuselib_fire") : NULL;
    if (!fire)
        return 2;
    int round = 0;
    for (; round < 10; ++round) {
        usleep(100000);
        fire(round);
    }
    emit_int(named("reuse.done"), round);
    return 0;
}

static int many_libraries(const char *directory, int total, double seconds)
{
    void (**fire)(int) = calloc((size_t)total, sizeof *fire);
    if (!fire)
        return 2;
    for (int i = 0; i < total; ++i) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/libabuse-%d.so", directory, i);
        void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            fprintf(stderr, "abuser: %s\n", dlerror());
            return 2;
        }
        fire[i] = (void (*)(int))dlsym(library, "abuselib_fire");
        if (!fire[i])
            return 2;
    }
    int rounds = 0;
    for (double end = now_seconds() + seconds; now_seconds() < end; ++rounds) {
        for (int i = 0; i < total; ++i)
            fire[i](rounds);
        usleep(100000);
    }
    emit_int(named("dlopen.done"), rounds);
    free(fire);
    return 0;
}

/* Cuts the file to nothing `delay_us` after it was loaded, and writes it
 * back 2 ms later: the cuts of successive libraries sweep the time after a
 * load in which a tracer reads the file. */
static int cut_and_restore(int fd, const char *bytes, size_t size, int delay_us)
{
    usleep((useconds_t)delay_us);
    if (ftruncate(fd, 0) != 0)
        return -1;
    usleep(2000);
    return pwrite(fd, bytes, size, 0) == (ssize_t)size ? 0 : -1;
}

static int truncated_libraries(const char *directory, int total)
{
    static char bytes[1 << 20];
    int loaded = 0;
    for (int i = 0; i < total; ++i) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/libabuse-%d.so", directory, i);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size > (off_t)sizeof bytes)
            return 2; /* written back whole, or not cut at all */
        ssize_t size = pread(fd, bytes, sizeof bytes, 0);
        void *library = size > 0 ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        void (*fire)(int) = library ? (void (*)(int))dlsym(library, "abuselib_fire") : NULL;
        if (!fire)
            return 2;
        fire(i);
        ++loaded;
        if (cut_and_restore(fd, bytes, (size_t)size, i * 50) != 0)
            return 2;
        close(fd);
    }
    emit_int(named("truncate.done"), loaded);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && argc <= 4 && strcmp(argv[1], "names") == 0)
        return many_names(argv[0], argc > 2 ? argv[2][0] : 'n', argc > 3 ? argv[3] : NULL);
    if (argc == 3 && strcmp(argv[1], "named-execs") == 0)
        return named_execs(argv[0], atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "hold") == 0)
        return hold_children(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "threads") == 0)
        return many_threads(atoi(argv[2]));
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "forks") == 0)
        return fork_storm(argv[0], atof(argv[2]), argc == 4 ? argv[3] : NULL);
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child_hello(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "reuse") == 0)
        return inode_reuse(argv[2]);
    if (argc == 5 && strcmp(argv[1], "dlopen") == 0)
        return many_libraries(argv[2], atoi(argv[3]), atof(argv[4]));
    if (argc == 4 && strcmp(argv[1], "truncate") == 0)
        return truncated_libraries(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: abuser names [PREFIX [NEXT]] | threads N | forks SECONDS | "
                    "named-execs N | hold N | reuse DIRECTORY | dlopen DIRECTORY N SECONDS | "
                    "truncate DIRECTORY N\n");
    return 2;
}
