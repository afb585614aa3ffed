// A traced process whose fork and exec records find its ring full: the
// stream must still read the new image's events by the new image's names
// (or leave them unnamed), and attach the new image's probes.
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <sched.h>
#include <sys/stat.h>
#include <trace.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "test_support.hpp"

using namespace test_support;

namespace {

// A copy of a helper beside it (its libraries are found from there), under
// a name of this test process and `tag`: another file, another object for
// the tracer.
class HelperCopy {
public:
    HelperCopy(const char *helper, int tag)
        : path_(helper_path(helper) + ".copy-" + std::to_string(getpid()) + "-" +
                std::to_string(tag))
    {
        std::filesystem::copy_file(helper_path(helper), path_,
                                   std::filesystem::copy_options::overwrite_existing);
        REQUIRE(chmod(path_.c_str(), 0755) == 0);
    }
    ~HelperCopy() { unlink(path_.c_str()); }
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

// Threads created while this lives run on CPU 0 only (they inherit the
// creating thread's affinity): the stream's drain among them.
class PinnedToCpu0 {
public:
    PinnedToCpu0()
    {
        REQUIRE(sched_getaffinity(0, sizeof before_, &before_) == 0);
        cpu_set_t cpu0;
        CPU_ZERO(&cpu0);
        CPU_SET(0, &cpu0);
        REQUIRE(sched_setaffinity(0, sizeof cpu0, &cpu0) == 0);
    }
    ~PinnedToCpu0() { sched_setaffinity(0, sizeof before_, &before_); }

private:
    cpu_set_t before_;
};

struct RoundEvents {
    int right = 0;   // an image's event under its own name
    int wrong = 0;   // under the other name
    int unnamed = 0; // posix_trace_unnamed_userevent
    int pings = 0;   // its USDT probe, attached after the exec
    bool exec_seen = false;
};

std::string name_of(trace_id_t trid, trace_event_id_t id)
{
    char name[TRACE_EVENT_NAME_MAX] = {};
    REQUIRE(posix_trace_eventid_get_name(trid, id, name) == 0);
    return name;
}

// Every event recorded so far, of the image process `image_pid` of round
// `round`, sorted into `out`.
void read_round(trace_id_t trid, pid_t image_pid, int round, RoundEvents &out)
{
    for (;;) {
        posix_trace_event_info info;
        unsigned char data[128] = {};
        size_t length = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_trygetnext_event(trid, &info, data, sizeof data, &length,
                                             &unavailable) == 0);
        if (unavailable)
            return;
        std::string name = name_of(trid, info.posix_event_id);
        int value = -1;
        std::memcpy(&value, data, sizeof value);
        if (name == "process_exec" && length >= 4 && value == image_pid)
            out.exec_seen = true;
        if (info.posix_pid != image_pid)
            continue;
        INFO(name << " " << value << " in round " << round);
        if (name == "exec_under_flood:ping") {
            CHECK(value == round);
            ++out.pings;
        } else if (name == "first" || name == "second") {
            bool right = value == (name == "first" ? 1000000 : 2000000) + round;
            CHECK(right);
            ++(right ? out.right : out.wrong);
        } else if (name == "posix_trace_unnamed_userevent") {
            CHECK((value == 1000000 + round || value == 2000000 + round));
            ++out.unnamed;
        }
    }
}

// exec_under_flood traced by an inheriting stream whose drain runs on CPU 0,
// the CPU the helper fills at real-time priority: the drain cannot run
// while the helper floods, so the ring stays full for its next fork, exec
// or dlopen.
class FloodedProcess {
public:
    FloodedProcess() : app_({helper_path("exec_under_flood")})
    {
        REQUIRE(app_.read_line() == "ready\n");
        trace_attr_t attr;
        REQUIRE(posix_trace_attr_init(&attr) == 0);
        REQUIRE(posix_trace_attr_setinherited(&attr, POSIX_TRACE_INHERITED) == 0);
        // A LOOP stream's events go to loop rings, which overwrite and
        // never refuse the lifecycle records their BPF rings carry.
        REQUIRE(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_UNTIL_FULL) == 0);
        // 256 KiB a CPU: the smallest ring, filled in a few milliseconds.
        REQUIRE(posix_trace_attr_setstreamsize(&attr, 512 * 1024) == 0);
        {
            PinnedToCpu0 pinned;
            REQUIRE(posix_trace_create(app_.pid(), &attr, &trid_) == 0);
        }
        posix_trace_attr_destroy(&attr);
        filter_thread_events(trid_);
        // Every probe, of the objects mapped now and of those mapped later.
        size_t attached = 0;
        REQUIRE(posix_trace_usdt_attach(trid_, "*", &attached) == 0);
    }
    ~FloodedProcess() { posix_trace_shutdown(trid_); }
    trace_id_t trid() const { return trid_; }
    // Says `line` while the stream runs; returns the answer once all that
    // was recorded until then can be read (a stop is a flush). The flood
    // filled the ring: the kernel counted what found no room.
    std::string round(const std::string &line)
    {
        uint64_t lost_before = lost_in_kernel();
        REQUIRE(posix_trace_start(trid_) == 0);
        app_.say((line + "\n").c_str());
        std::string said = app_.read_line();
        REQUIRE(posix_trace_stop(trid_) == 0);
        CHECK(lost_in_kernel() > lost_before);
        return said;
    }

private:
    uint64_t lost_in_kernel() const
    {
        posix_trace_counters counters{};
        REQUIRE(posix_trace_get_counters(trid_, &counters) == 0);
        return counters.lost_in_kernel;
    }
    ChildConversation app_;
    trace_id_t trid_ = 0;
};

} // namespace

TEST_CASE("lost lifecycle: an image whose exec record found the ring full is read by its own "
          "names, and its probes are attached",
          "[lifecycle][abuse]")
{
    constexpr int kRounds = 20;
    FloodedProcess flooded;
    RoundEvents total;
    int execs_lost = 0;
    for (int round = 0; round < kRounds; ++round) {
        // A file of its own each round: probes attached in an earlier one do
        // not cover it.
        HelperCopy copy("exec_under_flood", round);
        std::string said = flooded.round("go " + std::to_string(round) + " " + copy.path());
        int done_round = -1, image_pid = -1;
        REQUIRE(std::sscanf(said.c_str(), "done %d %d", &done_round, &image_pid) == 2);
        RoundEvents events;
        read_round(flooded.trid(), image_pid, round, events);
        INFO("round " << round);
        CHECK(events.right + events.wrong + events.unnamed == 2);
        CHECK(events.pings == 1);
        execs_lost += !events.exec_seen;
        total.right += events.right;
        total.wrong += events.wrong;
        total.unnamed += events.unnamed;
        total.pings += events.pings;
    }
    WARN(execs_lost << " of " << kRounds << " exec records lost; the new image's events: "
                    << total.right << " named right, " << total.unnamed << " unnamed, "
                    << total.wrong << " named wrong; " << total.pings << " probes fired");
    CHECK(execs_lost > 0); // the case under test happened
    CHECK(total.wrong == 0);
    CHECK(total.right > 0); // by the image's own names, not all unnamed
    CHECK(total.pings == kRounds);
}

TEST_CASE("lost lifecycle: a library loaded while the ring is full has its probes attached",
          "[lifecycle][abuse]")
{
    constexpr int kRounds = 10;
    TempDir libraries;
    FloodedProcess flooded;
    for (int round = 0; round < kRounds; ++round) {
        // A file of its own each round: a library already loaded would not be again.
        std::string library = libraries.path() + "/libgated-" + std::to_string(round) + ".so";
        std::filesystem::copy_file(helper_path("libgatedlib.so"), library);
        std::string said = flooded.round("load " + std::to_string(round) + " " + library);
        INFO("round " << round);
        CHECK(said == "loaded " + std::to_string(round) + " 1\n");
        int fired = 0;
        for (;;) {
            posix_trace_event_info info;
            unsigned char data[128] = {};
            size_t length = 0;
            int unavailable = 0;
            REQUIRE(posix_trace_trygetnext_event(flooded.trid(), &info, data, sizeof data, &length,
                                                 &unavailable) == 0);
            if (unavailable)
                break;
            if (name_of(flooded.trid(), info.posix_event_id) != "gatedlib:fire")
                continue;
            int64_t value = -1;
            std::memcpy(&value, data, sizeof value);
            CHECK(value == round);
            ++fired;
        }
        CHECK(fired == 1);
    }
}
