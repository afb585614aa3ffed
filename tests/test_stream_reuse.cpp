// A stream of the calling process that ends leaves its loaded BPF programs to
// the process's next stream of the same size, so that creating and shutting
// streams down is cheap. What the next stream must not inherit: the records,
// losses, filter, thread event programs and probes the user attached of the
// one before, nor, in a forked child, the parent's programs. The programs in
// use are seen as the process sees them: the ids of the BPF programs its
// descriptors hold. (Streams of other processes: test_stream_reuse_by_pid.)
#include <posix_trace/events.h>
#include <posix_trace/thread_db.h>
#include <posix_trace/usdt.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "lanes_support.hpp"
#include "reuse_support.hpp"
#include "test_support.hpp"

using namespace test_support;
using namespace lanes_support;
using namespace reuse_support;

namespace {

// A started stream of this process with the given attributes.
StreamGuard started(Attr &attributes, bool thread_events)
{
    StreamGuard stream = make_stream(attributes.get());
    if (!thread_events)
        filter_thread_events(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    return stream;
}

void spawn_and_join_threads(int count)
{
    for (int i = 0; i < count; ++i)
        std::thread([] {}).join();
}

// The programs a stream held while it lived; it has ended since.
std::set<unsigned> programs_of_an_ended_stream(Attr &attributes)
{
    StreamGuard stream = started(attributes, false);
    std::set<unsigned> programs = bpf_programs_held();
    REQUIRE(!programs.empty());
    return programs;
}

} // namespace

TEST_CASE("reuse: the next stream of the process takes the programs the one before loaded",
          "[reuse][self-tracing]")
{
    start_with_no_program_held();
    Attr attributes;
    std::set<unsigned> first_programs = programs_of_an_ended_stream(attributes);
    StreamGuard second = started(attributes, false);
    // Whichever way the process's user events come (lanes or probe): the
    // same way, so the probes are kept too.
    CHECK(bpf_programs_held() == first_programs);
    trace_event_id_t id = user_event("reuse.hello");
    emit_numbered(id, 0, 7);
    REQUIRE(posix_trace_stop(second.get()) == 0);
    auto events = read_available(second.get());
    REQUIRE(ids_of(events) ==
            std::vector<trace_event_id_t>{POSIX_TRACE_START, id, POSIX_TRACE_STOP});
}

TEST_CASE("reuse: nothing the stream before recorded or lost reaches the next one",
          "[reuse][self-tracing]")
{
    Attr attributes;
    REQUIRE(posix_trace_attr_setstreamfullpolicy(attributes.get(), POSIX_TRACE_UNTIL_FULL) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(attributes.get(), 64 * 1024) == 0);
    {
        // Thread events fill it; more are refused once it is full, and its
        // shutdown leaves what it did not read in the stream and the rings.
        StreamGuard first = started(attributes, true);
        auto deadline = Clock::now() + std::chrono::seconds(30);
        while (status_of(first.get()).posix_stream_full_status != POSIX_TRACE_FULL) {
            REQUIRE(Clock::now() < deadline);
            spawn_and_join_threads(20);
        }
        spawn_and_join_threads(200);
        REQUIRE(posix_trace_start(first.get()) == 0); // no-op while full: POSIX
        posix_trace_loss_counters losses{};
        REQUIRE(posix_trace_get_loss_counters(first.get(), &losses) == 0);
        CHECK(losses.refused > 0);
    }
    StreamGuard second = started(attributes, false);
    trace_event_id_t id = user_event("reuse.after");
    emit_numbered(id, 0, 1);
    REQUIRE(posix_trace_stop(second.get()) == 0);
    auto events = read_available(second.get(), false);
    CHECK(ids_of(events) == std::vector<trace_event_id_t>{POSIX_TRACE_START, id, POSIX_TRACE_STOP});
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(second.get(), &losses) == 0);
    CHECK(losses.ring_full == 0);
    CHECK(losses.switches_unreported == 0);
    CHECK(losses.runs_skipped == 0);
    CHECK(losses.refused == 0);
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(second.get(), &counters) == 0);
    CHECK(counters.recorded == 3);
    CHECK(counters.lost_in_kernel == 0);
    CHECK(counters.lost_in_stream == 0);
}

TEST_CASE("reuse: the filter of the stream before and the programs it detached do not carry over",
          "[reuse][self-tracing]")
{
    Attr attributes;
    {
        StreamGuard first = started(attributes, false); // thread event programs detached
        spawn_and_join_threads(3);
    }
    StreamGuard second = started(attributes, true);
    pid_t created = 0;
    std::thread([&] { created = gettid(); }).join();
    REQUIRE(posix_trace_stop(second.get()) == 0);
    bool creation_seen = false, switch_seen = false;
    for (const Event &event : read_available(second.get(), false)) {
        td_event_data data;
        if (!is_thread_event(event.info.posix_event_id) || event.data.size() != sizeof data)
            continue;
        std::memcpy(&data, event.data.data(), sizeof data);
        unsigned td_event = POSIX_TRACE_TD_EVENT_OF(event.info.posix_event_id);
        creation_seen |= td_event == TD_CREATE && pid_t(data.value) == created;
        switch_seen |= td_event == TD_SWITCHTO && data.tid == created; // a detached program's
    }
    CHECK(creation_seen);
    CHECK(switch_seen);
}

TEST_CASE("reuse: a stream of another size loads its own programs, and the others go",
          "[reuse][self-tracing]")
{
    start_with_no_program_held();
    Attr small, large;
    REQUIRE(posix_trace_attr_setstreamsize(large.get(), size_t(64) << 20) == 0);
    std::set<unsigned> small_programs = programs_of_an_ended_stream(small);
    StreamGuard second = started(large, false);
    CHECK(new_programs(small_programs, bpf_programs_held()).size() == small_programs.size());
    // Streams of another size came: the small one's are released.
    CHECK(released_within(small_programs, std::chrono::seconds(20)));
    trace_event_id_t id = user_event("reuse.large");
    emit_numbered(id, 0, 2);
    REQUIRE(posix_trace_stop(second.get()) == 0);
    CHECK(ids_of(read_available(second.get())) ==
          std::vector<trace_event_id_t>{POSIX_TRACE_START, id, POSIX_TRACE_STOP});
}

TEST_CASE("reuse: a child forked after a stream ended loads programs of its own",
          "[reuse][self-tracing]")
{
    start_with_no_program_held();
    Attr attributes;
    std::set<unsigned> parent_programs = programs_of_an_ended_stream(attributes);
    int status = in_child([&] {
        trace_id_t trid;
        if (posix_trace_create(0, attributes.get(), &trid) != 0)
            return 10;
        // The parent's parked programs may be open here too (inherited
        // descriptors): the stream's own are the ones the parent lacked.
        if (new_programs(parent_programs, bpf_programs_held()).size() != parent_programs.size())
            return 11;
        if (filter_out_thread_events(trid) != 0 || posix_trace_start(trid) != 0)
            return 12;
        trace_event_id_t id;
        if (posix_trace_eventid_open("reuse.child", &id) != 0)
            return 13;
        posix_trace_event(id, nullptr, 0);
        if (posix_trace_stop(trid) != 0)
            return 14;
        std::vector<trace_event_id_t> ids;
        posix_trace_event_info info;
        char data[64];
        size_t length;
        int unavailable = 0;
        while (posix_trace_trygetnext_event(trid, &info, data, sizeof data, &length,
                                            &unavailable) == 0 &&
               !unavailable)
            ids.push_back(info.posix_event_id);
        posix_trace_shutdown(trid);
        return ids == std::vector<trace_event_id_t>{POSIX_TRACE_START, id, POSIX_TRACE_STOP} ? 0
                                                                                             : 15;
    });
    CHECK(status == 0);
}

TEST_CASE("reuse: programs no stream takes are released", "[reuse][self-tracing]")
{
    start_with_no_program_held();
    Attr attributes;
    CHECK(released_within(programs_of_an_ended_stream(attributes), std::chrono::seconds(20)));
}

TEST_CASE("reuse: the probes the user attached to a stream do not fire into the next",
          "[reuse][self-tracing]")
{
    start_with_no_program_held();
    Attr attributes;
    std::set<unsigned> first_programs;
    {
        StreamGuard first = started(attributes, false);
        size_t attached = 0;
        REQUIRE(posix_trace_usdt_attach(first.get(), "posix_trace:eventid_open", &attached) == 0);
        REQUIRE(attached > 0);
        first_programs = bpf_programs_held();
    }
    // The programs are the same; the probe was retired with the first
    // stream, and fires for nothing until it is detached.
    StreamGuard second = started(attributes, false);
    CHECK(bpf_programs_held() == first_programs);
    trace_event_id_t id = user_event("reuse.no.probe");
    emit_numbered(id, 0, 3);
    REQUIRE(posix_trace_stop(second.get()) == 0);
    // The probe the first stream attached does not fire into this one.
    CHECK(ids_of(read_available(second.get())) ==
          std::vector<trace_event_id_t>{POSIX_TRACE_START, id, POSIX_TRACE_STOP});
}
