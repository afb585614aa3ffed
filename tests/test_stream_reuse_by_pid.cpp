// Streams of another process, traced by pid, one after another: each takes
// the BPF programs the one before loaded. It keeps that one's probes only
// when it traces the same process, still running, and the user attached
// none; otherwise they are retired (they fire for nothing from then on) and
// detached once the tracer set no stream up for a while. Whatever was kept
// or retired, each event of the traced process is recorded once, by the
// stream that traces it.
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <trace.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "reuse_support.hpp"
#include "test_support.hpp"

using namespace test_support;
using namespace reuse_support;

namespace {

using Emitter = test_support::RepeatEmitter;

// A started stream of `pid`, with the USDT probe repeat:fire when asked.
StreamGuard started_on(pid_t pid, bool with_usdt_probe)
{
    trace_id_t trid = 0;
    REQUIRE(posix_trace_create(pid, nullptr, &trid) == 0);
    StreamGuard stream(trid);
    filter_thread_events(trid);
    if (with_usdt_probe) {
        size_t attached = 0;
        REQUIRE(posix_trace_usdt_attach(trid, "repeat:fire", &attached) == 0);
        REQUIRE(attached == 1);
    }
    REQUIRE(posix_trace_start(trid) == 0);
    return stream;
}

// The events of `stream`, stopped now, as "pid:name", system events by id.
std::vector<std::string> recorded(StreamGuard &stream)
{
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    std::vector<std::string> seen;
    for (const Event &event : read_available(stream.get())) {
        trace_event_id_t id = event.info.posix_event_id;
        if (id < POSIX_TRACE_USER_EVENT_FIRST) {
            seen.push_back(std::to_string(id));
            continue;
        }
        char name[TRACE_EVENT_NAME_MAX] = {};
        REQUIRE(posix_trace_eventid_get_name(stream.get(), id, name) == 0);
        seen.push_back(std::to_string(event.info.posix_pid) + ":" + name);
    }
    return seen;
}

// The pid the namespace's last fork took, as the kernel lets root set it.
void set_last_pid(pid_t pid)
{
    std::ofstream last("/proc/sys/kernel/ns_last_pid");
    last << pid;
    last.flush();
    REQUIRE(last.good());
}

std::string start_id()
{
    return std::to_string(POSIX_TRACE_START);
}

std::string stop_id()
{
    return std::to_string(POSIX_TRACE_STOP);
}

std::string of(const Emitter &emitter, const char *name)
{
    return std::to_string(emitter.pid()) + ":" + name;
}

} // namespace

TEST_CASE("reuse by pid: a stream of the same process takes the programs and the probes", "[reuse]")
{
    start_with_no_program_held();
    Emitter emitter;
    std::set<unsigned> first_programs;
    size_t first_links = 0;
    for (int stream_number = 0; stream_number < 3; ++stream_number) {
        StreamGuard stream = started_on(emitter.pid(), false);
        if (stream_number == 0) {
            first_programs = bpf_programs_held();
            first_links = bpf_links_held();
        } else {
            CHECK(bpf_programs_held() == first_programs);
            CHECK(bpf_links_held() == first_links); // nothing retired, nothing attached again
        }
        emitter.round();
        CHECK(recorded(stream) ==
              std::vector<std::string>{start_id(), of(emitter, "repeat.event"), stop_id()});
    }
}

TEST_CASE("reuse by pid: the probes of a stream of another process record nothing into the next",
          "[reuse]")
{
    start_with_no_program_held();
    Emitter first, second;
    std::set<unsigned> programs;
    {
        StreamGuard stream = started_on(first.pid(), true);
        programs = bpf_programs_held();
        first.round();
        CHECK(recorded(stream) == std::vector<std::string>{start_id(), of(first, "repeat.event"),
                                                           of(first, "repeat:fire"), stop_id()});
    }
    {
        // The first process's probes are retired, still attached: they
        // fire, for nothing.
        StreamGuard stream = started_on(second.pid(), true);
        CHECK(bpf_programs_held() == programs);
        first.round();
        second.round();
        first.round();
        CHECK(recorded(stream) == std::vector<std::string>{start_id(), of(second, "repeat.event"),
                                                           of(second, "repeat:fire"), stop_id()});
    }
    {
        // Back to the first process: its events once each, though the
        // probes of both streams before are still attached.
        StreamGuard stream = started_on(first.pid(), true);
        first.round();
        second.round();
        CHECK(recorded(stream) == std::vector<std::string>{start_id(), of(first, "repeat.event"),
                                                           of(first, "repeat:fire"), stop_id()});
    }
}

// The probes of a process that exited are not kept, even for a process that
// has its pid by the next stream: the kernel bound them to the process that
// exited, so they would fire for no one.
TEST_CASE("reuse by pid: the probes of a process that exited are not kept for one with its pid",
          "[reuse]")
{
    start_with_no_program_held();
    std::optional<Emitter> first;
    first.emplace();
    pid_t pid = first->pid();
    size_t links_of_first = 0;
    {
        StreamGuard stream = started_on(pid, false);
        links_of_first = bpf_links_held();
        first->round();
        CHECK(recorded(stream) ==
              std::vector<std::string>{start_id(), of(*first, "repeat.event"), stop_id()});
    }
    first.reset(); // killed and waited for: its pid is free
    std::optional<Emitter> second;
    for (int attempt = 0; attempt < 20 && (!second || second->pid() != pid); ++attempt) {
        second.reset();
        set_last_pid(pid - 1); // the next fork of the namespace takes `pid`
        second.emplace();
    }
    REQUIRE(second->pid() == pid);
    StreamGuard stream = started_on(pid, false);
    // The second process's own probes are attached, besides the first's,
    // retired and not detached yet.
    CHECK(bpf_links_held() > links_of_first);
    second->round();
    second->round();
    CHECK(recorded(stream) == std::vector<std::string>{start_id(), of(*second, "repeat.event"),
                                                       of(*second, "repeat.event"), stop_id()});
}

TEST_CASE("reuse by pid: a process's probes the user attached are not kept for its next stream",
          "[reuse]")
{
    start_with_no_program_held();
    Emitter emitter;
    for (int stream_number = 0; stream_number < 3; ++stream_number) {
        StreamGuard stream = started_on(emitter.pid(), stream_number != 1);
        emitter.round();
        emitter.round();
        std::vector<std::string> expected{start_id()};
        for (int round = 0; round < 2; ++round) {
            expected.push_back(of(emitter, "repeat.event"));
            if (stream_number != 1)
                expected.push_back(of(emitter, "repeat:fire"));
        }
        expected.push_back(stop_id());
        CHECK(recorded(stream) == expected);
    }
}

TEST_CASE("reuse by pid: the probes retired are detached and the programs released", "[reuse]")
{
    start_with_no_program_held();
    REQUIRE(links_released_within(std::chrono::seconds(20)));
    Emitter first, second;
    std::set<unsigned> programs;
    for (Emitter *emitter : {&first, &second, &first}) {
        StreamGuard stream = started_on(emitter->pid(), true);
        programs = bpf_programs_held();
        emitter->round();
    }
    CHECK(links_released_within(std::chrono::seconds(20)));
    CHECK(released_within(programs, std::chrono::seconds(20)));
}
