// User events of another process, traced by pid: names it registered before
// and after the tracer attached, read from its published name table; and
// what a small stream keeps of a flood of its probes.
#include "lanes_support.hpp"
#include "posixtrace.h"
#include "recording_support.hpp"
#include "test_support.hpp"

#include <bpf/bpf.h>
#include <catch2/catch.hpp>
#include <dirent.h>
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using test_support::helper_path;

// A process's table of names is read whole whenever one of its names is
// looked for: the names read are the stream's to keep once the process is
// gone, though only one was asked for while it lived.
TEST_CASE("by pid: names read from a process's memory stay known after it exits", "[bypid]")
{
    test_support::ChildConversation emitter({helper_path("user_event_emitter"), "two"});
    REQUIRE(emitter.read_line() == "ready\n");
    trace_id_t trid;
    REQUIRE(posix_trace_create(emitter.pid(), nullptr, &trid) == 0);
    char name[TRACE_EVENT_NAME_MAX] = {};
    REQUIRE(posix_trace_eventid_get_name(trid, POSIX_TRACE_USER_EVENT_FIRST, name) == 0);
    CHECK(std::string(name) == "emitter.before");
    emitter.say("go\n");
    REQUIRE(emitter.read_line() == "done\n");
    emitter.say("bye\n");
    int status = 0;
    REQUIRE(waitpid(emitter.pid(), &status, 0) == emitter.pid());
    REQUIRE(posix_trace_eventid_get_name(trid, POSIX_TRACE_USER_EVENT_FIRST + 1, name) == 0);
    CHECK(std::string(name) == "emitter.early");
    REQUIRE(posix_trace_shutdown(trid) == 0);
}

TEST_CASE("by pid: user events of a process linked with libposixtrace, with their names", "[bypid]")
{
    test_support::ChildConversation emitter({helper_path("user_event_emitter")});
    REQUIRE(emitter.read_line() == "ready\n");

    trace_id_t trid;
    REQUIRE(posix_trace_create(emitter.pid(), nullptr, &trid) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    emitter.say("go\n");
    REQUIRE(emitter.read_line() == "done\n");
    REQUIRE(posix_trace_stop(trid) == 0);

    std::map<std::string, std::string> payload_of;
    for (;;) {
        posix_trace_event_info info;
        char data[64] = {};
        size_t len = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_trygetnext_event(trid, &info, data, sizeof data, &len, &unavailable) ==
                0);
        if (unavailable)
            break;
        if (info.posix_event_id < POSIX_TRACE_USER_EVENT_FIRST)
            continue;
        char name[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(trid, info.posix_event_id, name) == 0);
        CHECK(info.posix_pid == emitter.pid());
        CHECK(info.posix_tid == emitter.pid());
        payload_of[name] = std::string(data, len ? len - 1 : 0);
    }
    CHECK(payload_of == std::map<std::string, std::string>{{"emitter.before", "first payload"},
                                                           {"emitter.after", "second payload"}});

    // Both names are event types of the stream; ids are the process's own.
    std::vector<std::string> user_types;
    for (;;) {
        trace_event_id_t id;
        int unavailable = 0;
        REQUIRE(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
        if (unavailable)
            break;
        char name[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(trid, id, name) == 0);
        if (id >= POSIX_TRACE_USER_EVENT_FIRST && id < POSIX_TRACE_USDT_EVENT_FIRST)
            user_types.push_back(name);
    }
    CHECK(user_types == std::vector<std::string>{"emitter.before", "emitter.after"});
    trace_event_id_t id = 0;
    REQUIRE(posix_trace_trid_eventid_open(trid, "emitter.after", &id) == 0);
    CHECK(id == POSIX_TRACE_USER_EVENT_FIRST + 1);
    REQUIRE(posix_trace_trid_eventid_open(trid, "never.registered", &id) == 0);
    CHECK(id == POSIX_TRACE_UNNAMED_USEREVENT);
    emitter.say("bye\n");
    REQUIRE(posix_trace_shutdown(trid) == 0);
}

namespace {

constexpr uint64_t kTicks = 40 * 200;

// How kTicks ticks come from CPU 0: in 40 bursts of 200, 1 ms apart (each
// burst a fifth of a kernel ring, which the drain empties every millisecond
// and as it passes a quarter full), or all at once while the drain cannot
// run (the child real-time on the drain's one CPU).
enum class Flood { Paced, DrainBehind };

// A 64 KiB stream of a tick_bursts child with the given full policy, its
// probe attached, given kTicks ticks, then stopped. The numbers of the
// ticks read, in the order read; `stream` holds the stream.
std::vector<uint64_t> ticks_kept_by_small_stream(int full_policy, test_support::StreamGuard &stream,
                                                 Flood flood = Flood::Paced)
{
    test_support::ChildConversation child({helper_path("tick_bursts")});
    REQUIRE(child.read_line() == "ready\n");
    test_support::Attr attr;
    REQUIRE(posix_trace_attr_setstreamsize(attr.get(), 64 * 1024) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(attr.get(), full_policy) == 0);
    trace_id_t trid = 0;
    REQUIRE(posix_trace_create(child.pid(), attr.get(), &trid) == 0);
    stream = test_support::StreamGuard(trid);
    test_support::filter_thread_events(trid);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(trid, "ticks:tick", &attached) == 0);
    REQUIRE(attached == 1);
    if (flood == Flood::Paced) {
        REQUIRE(posix_trace_start(trid) == 0);
        child.say("0 40 200 1000\n");
        REQUIRE(child.read_line() == "done\n");
    } else {
        lanes_support::DrainBehindChild starved(child.pid());
        REQUIRE(posix_trace_start(trid) == 0);
        child.say("0 1 8000 0\n");
        REQUIRE(child.read_line() == "done\n");
    }
    posix_trace_stop(trid); // an UNTIL_FULL stream stopped itself already
    std::vector<uint64_t> ticks;
    for (const test_support::Event &event : recording_support::read_everything(trid))
        if (event.info.posix_event_id >= POSIX_TRACE_USDT_EVENT_FIRST)
            ticks.push_back(recording_support::payload_as<uint64_t>(event.data));
    return ticks;
}

std::vector<uint64_t> numbers_from(uint64_t first, size_t count)
{
    std::vector<uint64_t> numbers(count);
    for (size_t i = 0; i < count; ++i)
        numbers[i] = first + i;
    return numbers;
}

// A 64 KiB LOOP stream given the flood keeps its newest ticks with no gap,
// every older one counted overwritten, none lost in a ring.
void loop_stream_ends_with_newest(Flood flood)
{
    test_support::StreamGuard stream;
    std::vector<uint64_t> ticks = ticks_kept_by_small_stream(POSIX_TRACE_LOOP, stream, flood);
    REQUIRE(!ticks.empty());
    CHECK(ticks.size() < kTicks / 4); // 64 KiB holds a few hundred
    CHECK(ticks == numbers_from(kTicks - ticks.size(), ticks.size()));
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.ring_full == 0);
    // The start event may be among the oldest overwritten.
    CHECK(losses.overwritten >= kTicks - ticks.size());
    CHECK(losses.overwritten <= kTicks - ticks.size() + 1);
}

} // namespace

// The kernel's rings drop the newest record when full, but they only carry
// records to the drain: the stream's size and policy decide what is kept,
// as for the calling process's own events.
TEST_CASE("by pid: a 64 KiB LOOP stream given a flood of a process's probes ends with the newest",
          "[bypid]")
{
    loop_stream_ends_with_newest(Flood::Paced);
}

// The drain cannot run while the flood comes: the kernel's loop rings
// overwrite their oldest records, as the stream would, and the drain finds
// the newest there once it runs. A BPF ring buffer would have kept the
// oldest and refused the rest.
TEST_CASE("by pid: a 64 KiB LOOP stream ends with the newest of a flood its drain was late for",
          "[bypid]")
{
    loop_stream_ends_with_newest(Flood::DrainBehind);
}

namespace {

// The bytes the programs have written so far to every BPF ring buffer of
// the process's streams ("pt_ring"), from each ring's read-only producer
// page: what they discarded counts too.
uint64_t bytes_written_to_kernel_rings()
{
    const long page = sysconf(_SC_PAGESIZE);
    uint64_t written = 0;
    DIR *fds = opendir("/proc/self/fd");
    REQUIRE(fds != nullptr);
    while (dirent *entry = readdir(fds)) {
        int fd = std::atoi(entry->d_name);
        bpf_map_info info{};
        __u32 length = sizeof info;
        if (fd <= 2 || bpf_obj_get_info_by_fd(fd, &info, &length) != 0 ||
            info.type != BPF_MAP_TYPE_RINGBUF || std::string(info.name) != "pt_ring")
            continue;
        void *producer = mmap(nullptr, size_t(page), PROT_READ, MAP_SHARED, fd, page);
        REQUIRE(producer != MAP_FAILED);
        written += __atomic_load_n(static_cast<const uint64_t *>(producer), __ATOMIC_ACQUIRE);
        munmap(producer, size_t(page));
    }
    closedir(fds);
    return written;
}

} // namespace

// A loop ring makes no descriptor readable: each quarter of it begun wakes
// the drain through the CPU's BPF ring buffer, with an empty record (16
// bytes there) discarded. So a flood makes one wakeup for every quarter
// it fills, not one a record; nothing else writes those rings while the
// child only fires its probe.
TEST_CASE("by pid: a LOOP stream's loop ring wakes the drain at each quarter", "[bypid]")
{
    test_support::ChildConversation child({helper_path("tick_bursts")});
    REQUIRE(child.read_line() == "ready\n");
    test_support::Attr attr;
    REQUIRE(posix_trace_attr_setstreamsize(attr.get(), 64 * 1024) == 0); // 256 KiB loop rings
    REQUIRE(posix_trace_attr_setstreamfullpolicy(attr.get(), POSIX_TRACE_LOOP) == 0);
    trace_id_t trid = 0;
    REQUIRE(posix_trace_create(child.pid(), attr.get(), &trid) == 0);
    test_support::StreamGuard stream(trid);
    test_support::filter_thread_events(trid);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(trid, "ticks:tick", &attached) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    uint64_t before = bytes_written_to_kernel_rings();
    child.say(("0 1 " + std::to_string(kTicks) + " 0\n").c_str()); // 7 rounds of CPU 0's loop ring
    REQUIRE(child.read_line() == "done\n");
    uint64_t wakeups_bytes = bytes_written_to_kernel_rings() - before;
    // A probe's record has a fixed size; records fill a chunk whole ones.
    constexpr size_t kSpan = (sizeof(pt_loop_header) + PT_RECORD_HEADER_SIZE +
                              PT_USDT_MAX_ARGS * 8 + PT_USDT_STRING_MAX + 8 + 15) &
                             ~size_t(15);
    constexpr size_t kChunksFilled = kTicks / (PT_LOOP_CHUNK_BYTES / kSpan);
    constexpr size_t kQuartersFilled = kChunksFilled / (256 * 1024 / 4 / PT_LOOP_CHUNK_BYTES);
    CHECK(wakeups_bytes % 16 == 0);
    CHECK(wakeups_bytes / 16 >= kQuartersFilled);
    CHECK(wakeups_bytes / 16 <= kQuartersFilled + 1);
    posix_trace_stop(trid);
    uint64_t newest = 0; // what the stream kept is still the newest
    for (const test_support::Event &event : recording_support::read_everything(trid))
        if (event.info.posix_event_id >= POSIX_TRACE_USDT_EVENT_FIRST)
            newest = recording_support::payload_as<uint64_t>(event.data);
    CHECK(newest == kTicks - 1);
}

TEST_CASE("by pid: a 64 KiB UNTIL_FULL stream given a flood of a process's probes keeps the oldest",
          "[bypid]")
{
    test_support::StreamGuard stream;
    std::vector<uint64_t> ticks = ticks_kept_by_small_stream(POSIX_TRACE_UNTIL_FULL, stream);
    REQUIRE(!ticks.empty());
    CHECK(ticks.size() < kTicks / 4);
    CHECK(ticks == numbers_from(0, ticks.size()));
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.ring_full == 0);
    CHECK(losses.overwritten == 0);
}
