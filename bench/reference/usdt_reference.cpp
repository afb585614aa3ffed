// The reference of the uprobe path (bench/run.sh): a plain libbpf program on
// posix_trace_event()'s USDT probe in `bench_user_event external COUNT`,
// copying its 64 bytes into a BPF ring buffer that a consumer thread empties
// every millisecond, or an empty one.
//   usdt_reference copy|empty BENCH_USER_EVENT LIBPOSIXTRACE COUNT
// prints "ns_per_event=.. kept=.. lost=..": the emitter's cost per event, the
// records the consumer read, those the ring had no room for.
#include <bpf/libbpf.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "usdt_copy.skel.h"

namespace {

struct SkeletonDeleter {
    void operator()(usdt_copy_bpf *skeleton) const { usdt_copy_bpf__destroy(skeleton); }
};
struct RingDeleter {
    void operator()(ring_buffer *ring) const { ring_buffer__free(ring); }
};
struct LinkDeleter {
    void operator()(bpf_link *link) const { bpf_link__destroy(link); }
};

// The emitter, started with its stdout on a pipe; its pid once it is
// ready. One left waiting for its signal (an attach that failed) is killed.
struct Emitter {
    pid_t pid = -1;
    FILE *out = nullptr;
    ~Emitter()
    {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
        if (out)
            fclose(out);
    }
};

// False if it could not be started or did not say it was ready.
bool start_emitter(Emitter &emitter, const char *bench, const char *count)
{
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0)
        return false;
    emitter.pid = fork();
    if (emitter.pid == 0) {
        dup2(pipe_fds[1], 1);
        close(pipe_fds[0]);
        execl(bench, bench, "external", count, (char *)nullptr);
        _exit(127);
    }
    close(pipe_fds[1]);
    emitter.out = fdopen(pipe_fds[0], "r");
    char line[128];
    return emitter.pid > 0 && emitter.out && fgets(line, sizeof line, emitter.out) &&
           strstr(line, "ready");
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "copy") != 0 && strcmp(argv[1], "empty") != 0)) {
        std::fprintf(stderr, "usage: %s copy|empty BENCH_USER_EVENT LIBPOSIXTRACE COUNT\n",
                     argv[0]);
        return 2;
    }
    bool copy = strcmp(argv[1], "copy") == 0;
    Emitter emitter;
    if (!start_emitter(emitter, argv[2], argv[4]))
        return 1;
    std::unique_ptr<usdt_copy_bpf, SkeletonDeleter> skeleton(usdt_copy_bpf__open());
    if (!skeleton)
        return 1;
    bpf_program__set_autoload(copy ? skeleton->progs.empty_event : skeleton->progs.copy_event,
                              false);
    if (usdt_copy_bpf__load(skeleton.get()) != 0)
        return 1;
    std::unique_ptr<bpf_link, LinkDeleter> link(
        bpf_program__attach_usdt(copy ? skeleton->progs.copy_event : skeleton->progs.empty_event,
                                 emitter.pid, argv[3], "posix_trace", "event", nullptr));
    if (!link)
        return 1;
    unsigned long kept = 0;
    auto count = [](void *context, void *, size_t) {
        ++*static_cast<unsigned long *>(context);
        return 0;
    };
    std::unique_ptr<ring_buffer, RingDeleter> ring(
        ring_buffer__new(bpf_map__fd(skeleton->maps.records), count, &kept, nullptr));
    if (!ring)
        return 1;
    std::atomic<bool> done{false};
    std::thread consumer([&] {
        while (!done.load()) {
            ring_buffer__consume(ring.get());
            usleep(1000);
        }
        ring_buffer__consume(ring.get());
    });
    kill(emitter.pid, SIGUSR1);
    char line[128] = {};
    bool said = fgets(line, sizeof line, emitter.out) != nullptr;
    waitpid(emitter.pid, nullptr, 0);
    emitter.pid = -1;
    done = true;
    consumer.join();
    const char *cost = said ? strstr(line, "ns_per_event=") : nullptr;
    if (!cost)
        return 1;
    std::printf("ns_per_event=%g kept=%lu lost=%llu\n", std::atof(cost + 13), kept,
                (unsigned long long)skeleton->bss->lost);
    return 0;
}
