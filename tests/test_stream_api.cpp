// Tests of the trace stream functions of <trace.h> on real BPF: create,
// start/stop, filter, attributes, status and clear (the getnext family,
// shutdown, invalid handles and event types: test_stream_reading.cpp).
// Every test creates its own stream tracing this process (pid 0) and emits
// user events with posix_trace_event(). Runs as root.
#include <posix_trace/events.h>
#include <trace.h>

#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace test_support;

namespace {

trace_event_set_t make_set(std::initializer_list<trace_event_id_t> ids)
{
    trace_event_set_t set;
    posix_trace_eventset_empty(&set);
    for (auto id : ids)
        posix_trace_eventset_add(id, &set);
    return set;
}

bool same_set(const trace_event_set_t &a, const trace_event_set_t &b)
{
    return std::memcmp(&a, &b, sizeof a) == 0;
}

trace_event_set_t current_filter(trace_id_t trid)
{
    trace_event_set_t set;
    std::memset(&set, 0xa5, sizeof set);
    REQUIRE(posix_trace_get_filter(trid, &set) == 0);
    return set;
}

bool member(trace_event_id_t id, const trace_event_set_t &set)
{
    int is = -1;
    REQUIRE(posix_trace_eventset_ismember(id, &set, &is) == 0);
    return is != 0;
}

pid_t dead_pid()
{
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    return child;
}

// Stream slots (TRACE_SYS_MAX system-wide) currently held by this process,
// or by the others: the slot lock files that /proc/locks shows locked by
// our pid, or by another. Lets the EAGAIN test stay exact while other test
// runs hold streams.
int slots_held(bool by_this_process)
{
    std::set<std::pair<dev_t, ino_t>> slots;
    for (const char *dir : {"/run/posixtrace", "/tmp"})
        for (int i = 0; i < TRACE_SYS_MAX; ++i) {
            std::string path = std::string(dir) + "/stream-slot." + std::to_string(i);
            struct stat st {};
            if (stat(path.c_str(), &st) == 0)
                slots.insert({st.st_dev, st.st_ino});
        }
    std::ifstream locks("/proc/locks");
    std::string line;
    int held = 0;
    while (std::getline(locks, line)) {
        std::istringstream in(line);
        std::string index, type, mode, access, pid, where;
        in >> index >> type;
        if (type == "->" || type != "FLOCK")
            continue;
        in >> mode >> access >> pid >> where;
        unsigned major_no = 0, minor_no = 0;
        unsigned long long inode = 0;
        if (std::sscanf(where.c_str(), "%x:%x:%llu", &major_no, &minor_no, &inode) != 3)
            continue;
        if ((std::stol(pid) == long(getpid())) != by_this_process)
            continue;
        if (slots.count({makedev(major_no, minor_no), ino_t(inode)}))
            ++held;
    }
    return held;
}

} // namespace

// ---- posix_trace_create -------------------------------------------------

TEST_CASE("create: succeeds with NULL or initialised attr, for pid 0 and getpid()",
          "[stream][self-tracing]")
{
    SECTION("NULL attr, pid 0")
    {
        trace_id_t trid = -1;
        REQUIRE(posix_trace_create(0, nullptr, &trid) == 0);
        StreamGuard guard(trid);
        CHECK(status_of(trid).posix_stream_status == POSIX_TRACE_SUSPENDED);
    }
    SECTION("initialised attr, pid getpid()")
    {
        trace_attr_t attr;
        REQUIRE(posix_trace_attr_init(&attr) == 0);
        trace_id_t trid = -1;
        REQUIRE(posix_trace_create(getpid(), &attr, &trid) == 0);
        StreamGuard guard(trid);
        CHECK(status_of(trid).posix_stream_status == POSIX_TRACE_SUSPENDED);
        posix_trace_attr_destroy(&attr);
    }
    SECTION("two streams get distinct ids")
    {
        auto a = make_stream();
        auto b = make_stream();
        CHECK(a.get() != b.get());
    }
}

TEST_CASE("create: EINVAL for NULL trid, uninitialised attr, POSIX_TRACE_FLUSH policy",
          "[stream][self-tracing]")
{
    trace_id_t trid = 12345;
    SECTION("NULL trid")
    {
        CHECK(posix_trace_create(0, nullptr, nullptr) == EINVAL);
    }
    SECTION("attr never initialised")
    {
        trace_attr_t attr;
        std::memset(&attr, 0, sizeof attr);
        int err = posix_trace_create(0, &attr, &trid);
        if (err == 0)
            posix_trace_shutdown(trid);
        CHECK(err == EINVAL);
    }
    SECTION("stream full policy POSIX_TRACE_FLUSH without a log")
    {
        trace_attr_t attr;
        REQUIRE(posix_trace_attr_init(&attr) == 0);
        REQUIRE(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_FLUSH) == 0);
        int err = posix_trace_create(0, &attr, &trid);
        if (err == 0)
            posix_trace_shutdown(trid);
        CHECK(err == EINVAL);
        posix_trace_attr_destroy(&attr);
    }
}

TEST_CASE("create: ESRCH for a process that does not exist", "[stream][self-tracing]")
{
    pid_t gone = dead_pid();
    trace_id_t trid = -1;
    int err = posix_trace_create(gone, nullptr, &trid);
    if (err == 0)
        posix_trace_shutdown(trid);
    CHECK(err == ESRCH);
}

TEST_CASE("create: EAGAIN once TRACE_SYS_MAX streams exist, works again after shutdown",
          "[stream][self-tracing]")
{
    // Small streams: each one maps a ring per CPU.
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 4096) == 0);

    int others_before = slots_held(false);
    std::vector<StreamGuard> streams;
    int err = 0;
    for (int i = 0; i <= TRACE_SYS_MAX; ++i) {
        trace_id_t trid = -1;
        err = posix_trace_create(0, &attr, &trid);
        if (err != 0)
            break;
        streams.emplace_back(trid);
    }
    int others_after = slots_held(false);
    INFO("slots held by other processes: " << others_before << " before, " << others_after
                                           << " after");
    CHECK(err == EAGAIN);
    if (others_before == others_after)
        CHECK(int(streams.size()) == TRACE_SYS_MAX - others_before);
    else
        WARN("other processes created or shut down streams meanwhile: count not checked");

    for (auto &s : streams)
        CHECK(s.shutdown() == 0);
    streams.clear();

    trace_id_t trid = -1;
    REQUIRE(posix_trace_create(0, &attr, &trid) == 0);
    StreamGuard again(trid);
    posix_trace_attr_destroy(&attr);
}

namespace {

// The address space this process has mapped, from /proc/self/status.
size_t mapped_bytes()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmSize:", 0) == 0)
            return size_t(std::stoull(line.substr(7))) * 1024;
    return 0;
}

} // namespace

// A thread that read the stream keeps it (its object) after another thread
// shut it down; the slot must be free all the same.
TEST_CASE("shutdown: the slot is free at once, while another thread still holds the stream",
          "[stream][self-tracing]")
{
    trace_id_t trid = -1;
    REQUIRE(posix_trace_create(0, nullptr, &trid) == 0);
    StreamGuard stream(trid);
    REQUIRE(posix_trace_start(trid) == 0);
    std::promise<void> read_once, may_end;
    std::thread reader([&, trid] {
        CHECK(get_next(trid, GetNext::Try).err == 0);
        read_once.set_value();
        may_end.get_future().wait();
        CHECK(get_next(trid, GetNext::Try).err == EINVAL);
    });
    read_once.get_future().wait();
    int held = slots_held(true);
    CHECK(stream.shutdown() == 0);
    CHECK(slots_held(true) == held - 1);
    may_end.set_value();
    reader.join();
}

TEST_CASE("create and create_withlog: ENOMEM when the stream's memory cannot be had",
          "[stream][self-tracing]")
{
    bool with_log = GENERATE(false, true);
    INFO((with_log ? "posix_trace_create_withlog" : "posix_trace_create"));
    char log_name[] = "/tmp/posixtrace-enomem-XXXXXX";
    int log_fd = mkstemp(log_name);
    REQUIRE(log_fd >= 0);
    unlink(log_name);
    int result = in_child([with_log, log_fd] {
        trace_attr_t attr;
        posix_trace_attr_init(&attr);
        if (posix_trace_attr_setstreamsize(&attr, size_t(1) << 30) != 0)
            return 101;
        // Room for everything a stream needs but its gigabyte of buffer.
        rlimit limit{};
        limit.rlim_cur = limit.rlim_max = mapped_bytes() + (256u << 20);
        if (setrlimit(RLIMIT_AS, &limit) != 0)
            return 102;
        trace_id_t trid = 0;
        return with_log ? posix_trace_create_withlog(0, &attr, log_fd, &trid)
                        : posix_trace_create(0, &attr, &trid);
    });
    close(log_fd);
    CHECK(result == ENOMEM);
}

TEST_CASE("create: EPERM without privileges", "[stream][self-tracing]")
{
    int code = in_child([] {
        if (setgroups(0, nullptr) != 0)
            return 201;
        if (setgid(65534) != 0)
            return 202;
        if (setuid(65534) != 0) // drops every capability
            return 203;
        trace_id_t trid = -1;
        return posix_trace_create(0, nullptr, &trid);
    });
    INFO("child exit code " << code << " (" << (code > 0 && code < 200 ? std::strerror(code) : "")
                            << ")");
    CHECK(code == EPERM);
}

// ---- state, start, stop ---------------------------------------------------

TEST_CASE("a new stream is suspended, not full, no overrun, not flushing; records nothing",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t a = user_event("stream_api.before_start");
    trace_event_id_t b = user_event("stream_api.after_start");

    auto status = status_of(trid);
    CHECK(status.posix_stream_status == POSIX_TRACE_SUSPENDED);
    CHECK(status.posix_stream_full_status == POSIX_TRACE_NOT_FULL);
    CHECK(status.posix_stream_overrun_status == POSIX_TRACE_NO_OVERRUN);
    CHECK(status.posix_stream_flush_status == POSIX_TRACE_NOT_FLUSHING);

    posix_trace_event(a, "x", 1);
    std::this_thread::sleep_for(10ms);
    CHECK(read_available(trid).empty());

    REQUIRE(posix_trace_start(trid) == 0);
    posix_trace_event(b, nullptr, 0);
    REQUIRE(posix_trace_stop(trid) == 0);
    CHECK(ids_of(read_available(trid)) ==
          std::vector<trace_event_id_t>{POSIX_TRACE_START, b, POSIX_TRACE_STOP});
}

TEST_CASE("start/stop: status, one start and one stop event, order start, user events, stop",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t a = user_event("stream_api.order_a");
    trace_event_id_t b = user_event("stream_api.order_b");

    REQUIRE(posix_trace_start(trid) == 0);
    CHECK(status_of(trid).posix_stream_status == POSIX_TRACE_RUNNING);
    REQUIRE(posix_trace_start(trid) == 0); // already running: no second start event
    CHECK(status_of(trid).posix_stream_status == POSIX_TRACE_RUNNING);

    const char hello[] = "hello";
    posix_trace_event(a, hello, sizeof hello);
    posix_trace_event(b, nullptr, 0);

    REQUIRE(posix_trace_stop(trid) == 0);
    CHECK(status_of(trid).posix_stream_status == POSIX_TRACE_SUSPENDED);
    REQUIRE(posix_trace_stop(trid) == 0); // already suspended: no second stop event
    CHECK(status_of(trid).posix_stream_status == POSIX_TRACE_SUSPENDED);

    std::this_thread::sleep_for(10ms);
    auto events = read_available(trid);
    REQUIRE(ids_of(events) ==
            std::vector<trace_event_id_t>{POSIX_TRACE_START, a, b, POSIX_TRACE_STOP});

    CHECK(events[0].data.size() == 0);
    CHECK(events[1].data == std::vector<unsigned char>(hello, hello + sizeof hello));
    CHECK(events[1].info.posix_pid == getpid());
    CHECK(events[2].data.size() == 0);
    REQUIRE(events[3].data.size() == sizeof(posix_trace_stop_data));
    posix_trace_stop_data stop;
    std::memcpy(&stop, events[3].data.data(), sizeof stop);
    CHECK(stop.cause == POSIX_TRACE_STOP_BY_CALL);

    for (size_t i = 1; i < events.size(); ++i)
        CHECK(timespec_le(events[i - 1].info.posix_timestamp, events[i].info.posix_timestamp));
}

TEST_CASE("stop flushes: every event emitted before it is readable at once",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t a = user_event("stream_api.flushed");
    constexpr int kCount = 200;

    REQUIRE(posix_trace_start(trid) == 0);
    for (int i = 0; i < kCount; ++i)
        posix_trace_event(a, &i, sizeof i);
    REQUIRE(posix_trace_stop(trid) == 0);

    auto events = read_available(trid); // no waiting
    REQUIRE(events.size() == kCount + 2);
    CHECK(events.front().info.posix_event_id == POSIX_TRACE_START);
    CHECK(events.back().info.posix_event_id == POSIX_TRACE_STOP);
    for (int i = 0; i < kCount; ++i) {
        const Event &e = events[size_t(i) + 1];
        CHECK(e.info.posix_event_id == a);
        int value = -1;
        REQUIRE(e.data.size() == sizeof value);
        std::memcpy(&value, e.data.data(), sizeof value);
        CHECK(value == i);
    }
}

// ---- filter -----------------------------------------------------------------

TEST_CASE("filter: empty at first; SET, ADD and SUB", "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t a = user_event("stream_api.filter_a");
    trace_event_id_t b = user_event("stream_api.filter_b");

    trace_event_set_t filter = current_filter(trid);
    CHECK(same_set(filter, make_set({})));

    trace_event_set_t set = make_set({POSIX_TRACE_STOP, a});
    REQUIRE(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET) == 0);
    filter = current_filter(trid);
    CHECK(member(POSIX_TRACE_STOP, filter));
    CHECK(member(a, filter));
    CHECK_FALSE(member(b, filter));
    CHECK_FALSE(member(POSIX_TRACE_START, filter));
    CHECK(same_set(filter, make_set({POSIX_TRACE_STOP, a})));

    set = make_set({b});
    REQUIRE(posix_trace_set_filter(trid, &set, POSIX_TRACE_ADD_EVENTSET) == 0);
    filter = current_filter(trid);
    CHECK(member(POSIX_TRACE_STOP, filter));
    CHECK(member(a, filter));
    CHECK(member(b, filter));
    CHECK(same_set(filter, make_set({POSIX_TRACE_STOP, a, b})));

    set = make_set({a, POSIX_TRACE_ERROR}); // ERROR is not in the filter: no effect
    REQUIRE(posix_trace_set_filter(trid, &set, POSIX_TRACE_SUB_EVENTSET) == 0);
    filter = current_filter(trid);
    CHECK(member(POSIX_TRACE_STOP, filter));
    CHECK_FALSE(member(a, filter));
    CHECK(member(b, filter));
    CHECK_FALSE(member(POSIX_TRACE_ERROR, filter));
    CHECK(same_set(filter, make_set({POSIX_TRACE_STOP, b})));

    set = make_set({a});
    REQUIRE(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET) == 0);
    CHECK(same_set(current_filter(trid), make_set({a})));

    set = make_set({});
    REQUIRE(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET) == 0);
    CHECK(same_set(current_filter(trid), make_set({})));
}

TEST_CASE("filter: EINVAL for an invalid how or a NULL set; filter unchanged",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_set_t initial = make_set({POSIX_TRACE_FILTER, 100});
    REQUIRE(posix_trace_set_filter(trid, &initial, POSIX_TRACE_SET_EVENTSET) == 0);

    trace_event_set_t other = make_set({POSIX_TRACE_START, 200});
    for (int how : {0, 99, -1, 4}) {
        CAPTURE(how);
        CHECK(posix_trace_set_filter(trid, &other, how) == EINVAL);
        CHECK(same_set(current_filter(trid), initial));
    }
    CHECK(posix_trace_set_filter(trid, nullptr, POSIX_TRACE_SET_EVENTSET) == EINVAL);
    CHECK(posix_trace_set_filter(trid, nullptr, POSIX_TRACE_ADD_EVENTSET) == EINVAL);
    CHECK(same_set(current_filter(trid), initial));
    CHECK(posix_trace_get_filter(trid, nullptr) == EINVAL);
}

TEST_CASE("filter: a filtered user event is not recorded, an unfiltered one is",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t a = user_event("stream_api.filtered");
    trace_event_id_t b = user_event("stream_api.unfiltered");

    trace_event_set_t set = make_set({a});
    REQUIRE(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    posix_trace_event(a, "a", 1);
    posix_trace_event(b, "b", 1);
    posix_trace_event(a, "a", 1);
    REQUIRE(posix_trace_stop(trid) == 0);
    std::this_thread::sleep_for(10ms);
    CHECK(ids_of(read_available(trid)) ==
          std::vector<trace_event_id_t>{POSIX_TRACE_START, b, POSIX_TRACE_STOP});
}

TEST_CASE("filter: a filter ends with its stream; a type let through again is recorded again",
          "[stream][self-tracing]")
{
    trace_event_id_t a = user_event("stream_api.filtered_then_not");
    trace_event_set_t only_a = make_set({a}), none = make_set({});
    {
        auto earlier = make_stream();
        REQUIRE(posix_trace_set_filter(earlier.get(), &only_a, POSIX_TRACE_SET_EVENTSET) == 0);
        REQUIRE(posix_trace_start(earlier.get()) == 0);
        posix_trace_event(a, "0", 1);
        REQUIRE(posix_trace_stop(earlier.get()) == 0);
        std::this_thread::sleep_for(10ms);
        CHECK(ids_of(read_available(earlier.get())) ==
              std::vector<trace_event_id_t>{POSIX_TRACE_START, POSIX_TRACE_STOP});
    }
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    REQUIRE(posix_trace_start(trid) == 0);
    posix_trace_event(a, "1", 1);
    REQUIRE(posix_trace_set_filter(trid, &only_a, POSIX_TRACE_SET_EVENTSET) == 0);
    posix_trace_event(a, "2", 1);
    REQUIRE(posix_trace_set_filter(trid, &none, POSIX_TRACE_SET_EVENTSET) == 0);
    posix_trace_event(a, "3", 1);
    REQUIRE(posix_trace_stop(trid) == 0);
    std::this_thread::sleep_for(10ms);

    auto events = read_available(trid);
    REQUIRE(ids_of(events) == std::vector<trace_event_id_t>{POSIX_TRACE_START, a,
                                                            POSIX_TRACE_FILTER, POSIX_TRACE_FILTER,
                                                            a, POSIX_TRACE_STOP});
    CHECK(std::string(events[1].data.begin(), events[1].data.end()) == "1");
    CHECK(std::string(events[4].data.begin(), events[4].data.end()) == "3");
}

TEST_CASE("filter: a change while running records posix_trace_filter, none while suspended",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    trace_event_id_t a = user_event("stream_api.filter_event_a");
    trace_event_id_t b = user_event("stream_api.filter_event_b");

    // Suspended: no event.
    trace_event_set_t first = make_set({a});
    REQUIRE(posix_trace_set_filter(trid, &first, POSIX_TRACE_SET_EVENTSET) == 0);
    std::this_thread::sleep_for(10ms);
    CHECK(read_available(trid).empty());

    REQUIRE(posix_trace_start(trid) == 0);
    trace_event_set_t added = make_set({b});
    REQUIRE(posix_trace_set_filter(trid, &added, POSIX_TRACE_ADD_EVENTSET) == 0);
    posix_trace_event(a, nullptr, 0); // both filtered now
    posix_trace_event(b, nullptr, 0);
    REQUIRE(posix_trace_stop(trid) == 0);

    // Suspended again: no event.
    trace_event_set_t removed = make_set({a, b});
    REQUIRE(posix_trace_set_filter(trid, &removed, POSIX_TRACE_SUB_EVENTSET) == 0);
    std::this_thread::sleep_for(10ms);

    auto events = read_available(trid);
    REQUIRE(ids_of(events) ==
            std::vector<trace_event_id_t>{POSIX_TRACE_START, POSIX_TRACE_FILTER, POSIX_TRACE_STOP});
    REQUIRE(events[1].data.size() == sizeof(posix_trace_filter_data));
    posix_trace_filter_data change;
    std::memcpy(&change, events[1].data.data(), sizeof change);
    CHECK(same_set(change.old_filter, make_set({a})));
    CHECK(same_set(change.new_filter, make_set({a, b})));
    CHECK(same_set(current_filter(trid), make_set({})));
}

// ---- attributes and status ---------------------------------------------------

TEST_CASE("get_attr: the attributes the stream was created with, and its creation time",
          "[stream][self-tracing]")
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    REQUIRE(posix_trace_attr_setname(&attr, "api-attrs") == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 1u << 20) == 0);
    REQUIRE(posix_trace_attr_setmaxdatasize(&attr, 256) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_UNTIL_FULL) == 0);
    REQUIRE(posix_trace_attr_setlogfullpolicy(&attr, POSIX_TRACE_APPEND) == 0);

    timespec before = realtime_now();
    trace_id_t trid = -1;
    REQUIRE(posix_trace_create(0, &attr, &trid) == 0);
    StreamGuard guard(trid);
    timespec after = realtime_now();

    // Changing the attributes object later does not change the stream.
    REQUIRE(posix_trace_attr_setname(&attr, "changed") == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 2u << 20) == 0);

    trace_attr_t got;
    std::memset(&got, 0, sizeof got);
    REQUIRE(posix_trace_get_attr(trid, &got) == 0);

    char name[TRACE_NAME_MAX] = {};
    REQUIRE(posix_trace_attr_getname(&got, name) == 0);
    CHECK(std::string(name) == "api-attrs");
    size_t size = 0;
    REQUIRE(posix_trace_attr_getstreamsize(&got, &size) == 0);
    CHECK(size == (1u << 20));
    REQUIRE(posix_trace_attr_getmaxdatasize(&got, &size) == 0);
    CHECK(size == 256);
    int policy = 0;
    REQUIRE(posix_trace_attr_getstreamfullpolicy(&got, &policy) == 0);
    CHECK(policy == POSIX_TRACE_UNTIL_FULL);
    REQUIRE(posix_trace_attr_getlogfullpolicy(&got, &policy) == 0);
    CHECK(policy == POSIX_TRACE_APPEND);
    REQUIRE(posix_trace_attr_getinherited(&got, &policy) == 0);
    CHECK(policy == POSIX_TRACE_CLOSE_FOR_CHILD);

    timespec created{};
    REQUIRE(posix_trace_attr_getcreatetime(&got, &created) == 0);
    CAPTURE(before.tv_sec, before.tv_nsec, created.tv_sec, created.tv_nsec, after.tv_sec,
            after.tv_nsec);
    CHECK(timespec_le(before, created));
    CHECK(timespec_le(created, after));

    CHECK(posix_trace_get_attr(trid, nullptr) == EINVAL);
    posix_trace_attr_destroy(&got);
    posix_trace_attr_destroy(&attr);
}

TEST_CASE("get_attr with NULL attr and default attributes", "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_attr_t got;
    REQUIRE(posix_trace_get_attr(stream.get(), &got) == 0);
    int policy = 0;
    REQUIRE(posix_trace_attr_getstreamfullpolicy(&got, &policy) == 0);
    CHECK(policy == POSIX_TRACE_LOOP);
    CHECK(posix_trace_get_attr(stream.get(), nullptr) == EINVAL);
}

TEST_CASE("get_status: EINVAL for a NULL status", "[stream][self-tracing]")
{
    auto stream = make_stream();
    CHECK(posix_trace_get_status(stream.get(), nullptr) == EINVAL);
}

// ---- clear -------------------------------------------------------------------

TEST_CASE("clear on a running stream: events gone, still running, new events recorded",
          "[stream][self-tracing]")
{
    auto stream = make_stream();
    trace_id_t trid = stream.get();
    filter_thread_events(trid);
    trace_event_id_t a = user_event("stream_api.clear_before");
    trace_event_id_t b = user_event("stream_api.clear_after");

    REQUIRE(posix_trace_start(trid) == 0);
    for (int i = 0; i < 5; ++i)
        posix_trace_event(a, &i, sizeof i);
    std::this_thread::sleep_for(20ms); // recorded into the stream by now
    posix_trace_event(a, nullptr, 0);  // and one still in the kernel ring

    REQUIRE(posix_trace_clear(trid) == 0);
    auto status = status_of(trid);
    CHECK(status.posix_stream_status == POSIX_TRACE_RUNNING);
    CHECK(status.posix_stream_full_status == POSIX_TRACE_NOT_FULL);
    auto r = get_next(trid, GetNext::Try);
    CHECK(r.err == 0);
    CHECK(r.unavailable != 0);

    posix_trace_event(b, "b", 1);
    REQUIRE(posix_trace_stop(trid) == 0);
    CHECK(ids_of(read_available(trid)) == std::vector<trace_event_id_t>{b, POSIX_TRACE_STOP});
}

TEST_CASE("clear on a suspended full stream: events gone, not full, still suspended",
          "[stream][self-tracing]")
{
    trace_attr_t attr;
    REQUIRE(posix_trace_attr_init(&attr) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&attr, 4096) == 0); // smallest: fills fast
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_LOOP) == 0);
    auto stream = make_stream(&attr);
    trace_id_t trid = stream.get();
    trace_event_id_t a = user_event("stream_api.clear_fill");
    trace_event_id_t b = user_event("stream_api.clear_fresh");

    REQUIRE(posix_trace_start(trid) == 0);
    char payload[64] = {};
    for (int i = 0; i < 300; ++i)
        posix_trace_event(a, payload, sizeof payload);
    REQUIRE(posix_trace_stop(trid) == 0);
    auto status = status_of(trid);
    CHECK(status.posix_stream_status == POSIX_TRACE_SUSPENDED);
    CHECK(status.posix_stream_full_status == POSIX_TRACE_FULL);

    REQUIRE(posix_trace_clear(trid) == 0);
    status = status_of(trid);
    CHECK(status.posix_stream_status == POSIX_TRACE_SUSPENDED);
    CHECK(status.posix_stream_full_status == POSIX_TRACE_NOT_FULL);
    auto r = get_next(trid, GetNext::Try);
    CHECK(r.err == 0);
    CHECK(r.unavailable != 0);

    REQUIRE(posix_trace_start(trid) == 0);
    posix_trace_event(b, nullptr, 0);
    REQUIRE(posix_trace_stop(trid) == 0);
    CHECK(ids_of(read_available(trid)) ==
          std::vector<trace_event_id_t>{POSIX_TRACE_START, b, POSIX_TRACE_STOP});
    posix_trace_attr_destroy(&attr);
}
