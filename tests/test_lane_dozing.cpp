// A stream that nothing comes to lets its drain sleep longer than its period
// (it dozes); a thread that starts a lane chunk wakes it through an eventfd
// of the process, once, and makes no system call for the records within a
// chunk.
#include <catch2/catch.hpp>
#include <trace.h>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "lanes_support.hpp"
#include "posixtrace.h"
#include "test_support.hpp"

using namespace test_support;
using namespace lanes_support;

namespace {

// A line of the descriptor's fdinfo, as a number in `base`; -1 if absent.
long long fdinfo_field(int fd, const std::string &field, int base)
{
    std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd));
    std::string line;
    while (std::getline(info, line))
        if (line.rfind(field + ":", 0) == 0)
            return std::strtoll(line.c_str() + field.size() + 1, nullptr, base);
    return -1;
}

// The counter, as the kernel shows it (hex).
long long eventfd_count(int fd)
{
    return fdinfo_field(fd, "eventfd-count", 16);
}

// Eventfds by their kernel id: a descriptor closed and made again may get
// the same number.
std::set<std::pair<long long, int>> open_eventfds()
{
    std::set<std::pair<long long, int>> fds;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return fds;
    while (dirent *entry = readdir(dir)) {
        char target[64] = {};
        std::string path = std::string("/proc/self/fd/") + entry->d_name;
        if (readlink(path.c_str(), target, sizeof target - 1) > 0 &&
            std::string(target) == "anon_inode:[eventfd]")
            fds.insert({fdinfo_field(std::atoi(entry->d_name), "eventfd-id", 10),
                        std::atoi(entry->d_name)});
    }
    closedir(dir);
    return fds;
}

struct Seen {
    int wakeup_fds_found = 0;
    long long count_once_dozing = -1;
    int first_wake_at = -1; // the event after which the count rose
    long long count_after_burst = -1;
    int events_read = 0;
};

constexpr int kBurst = 3000;

// The lanes' eventfd is made at a process's first stream, and stays: the
// one left once that stream is gone.
int lanes_wakeup_fd(Seen &seen, trace_event_id_t id)
{
    auto before = open_eventfds();
    {
        StreamGuard first = started_stream();
        emit_numbered(id, 0, 0);
    }
    int fd = -1;
    for (const auto &candidate : open_eventfds())
        if (!before.count(candidate)) {
            ++seen.wakeup_fds_found;
            fd = candidate.second;
        }
    return fd;
}

Seen watch_a_dozing_drain()
{
    Seen seen;
    trace_event_id_t id = user_event("lanes.dozing");
    int fd = lanes_wakeup_fd(seen, id);
    if (fd < 0)
        return seen;
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    StreamGuard stream = make_stream(&attr);
    posix_trace_attr_destroy(&attr);
    filter_thread_events(stream.get());
    // Written before the start, so the drain, which begins awake, reads it
    // when it first dozes.
    uint64_t one = 1;
    REQUIRE(write(fd, &one, sizeof one) == ssize_t(sizeof one));
    REQUIRE(posix_trace_start(stream.get()) == 0);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (eventfd_count(fd) != 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    seen.count_once_dozing = eventfd_count(fd);
    {
        DrainStarved starved; // the drain cannot read the eventfd again meanwhile
        for (int i = 0; i < kBurst; ++i) {
            emit_numbered(id, 1, i);
            if (seen.first_wake_at < 0 && eventfd_count(fd) != 0)
                seen.first_wake_at = i;
        }
        seen.count_after_burst = eventfd_count(fd);
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    auto sequences = sequences_of(read_available(stream.get()), id);
    seen.events_read = sequences[1] == sequence_up_to(kBurst) ? kBurst : int(sequences[1].size());
    return seen;
}

} // namespace

TEST_CASE("lanes: an idle drain dozes, and a writer that starts a chunk wakes it once",
          "[lanes][self-tracing]")
{
    if (uprobe_path_forced())
        return;                                        // no lanes
    Seen seen = in_forked_child(watch_a_dozing_drain); // its lanes have no eventfd yet
    REQUIRE(seen.wakeup_fds_found == 1);
    CHECK(seen.count_once_dozing == 0);
    // Within the first chunk's worth of records, and by one write only.
    size_t smallest_span = sizeof(Numbered) + sizeof(pt_record);
    INFO("woken after event " << seen.first_wake_at);
    CHECK(seen.first_wake_at >= 0);
    CHECK(size_t(seen.first_wake_at) <= 64 * 1024 / smallest_span);
    CHECK(seen.count_after_burst == 1);
    CHECK(seen.events_read == kBurst);
}
