// The Trace Log option: posix_trace_create_withlog, _flush, _shutdown on a
// stream with log, and _open, _rewind, _close and the getnext calls on the
// log, with real BPF streams writing real files (logs cut short, damaged or
// out of room: test_trace_log_damage.cpp).
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "log_support.hpp"
#include "test_support.hpp"

using namespace test_support;

TEST_CASE("a stream with log writes a log that posix_trace_open reads back exactly",
          "[log][self-tracing]")
{
    TempFile file;
    Attr a;
    REQUIRE(posix_trace_attr_setname(&a.attr, "round-trip") == 0);
    REQUIRE(posix_trace_attr_setmaxdatasize(&a.attr, 8192) == 0);
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
    trace_event_id_t id = user_event("log.round_trip");
    timespec before = stream_clock_now(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    const size_t count = 500;
    for (size_t i = 0; i < count; ++i) {
        auto bytes = numbered_payload(i);
        posix_trace_event(id, bytes.data(), bytes.size());
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);
    timespec after = stream_clock_now(stream.get());
    trace_attr_t stream_attr;
    REQUIRE(posix_trace_get_attr(stream.get(), &stream_attr) == 0);
    REQUIRE(stream.shutdown() == 0);

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    REQUIRE(read.error == 0);
    auto ids = ids_of(read.events);
    REQUIRE(ids.size() == count + 2);
    CHECK(ids.front() == POSIX_TRACE_START);
    CHECK(ids.back() == POSIX_TRACE_STOP);
    std::vector<Event> user = user_events_of(read.events, id);
    REQUIRE(user.size() == count);
    for (size_t i = 0; i < count; ++i) {
        INFO("event " << i);
        CHECK(user[i].data == numbered_payload(i));
        CHECK(user[i].info.posix_pid == getpid());
        CHECK(user[i].info.posix_tid == gettid());
        CHECK(user[i].info.posix_thread_id == pthread_self());
        CHECK(user[i].info.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED);
        CHECK(timespec_le(before, user[i].info.posix_timestamp));
        CHECK(timespec_le(user[i].info.posix_timestamp, after));
        if (i)
            CHECK(timespec_le(user[i - 1].info.posix_timestamp, user[i].info.posix_timestamp));
    }

    SECTION("names, attributes and status come from the log")
    {
        char name[TRACE_EVENT_NAME_MAX];
        REQUIRE(posix_trace_eventid_get_name(log.get(), id, name) == 0);
        CHECK(std::string(name) == "log.round_trip");
        REQUIRE(posix_trace_eventid_get_name(log.get(), POSIX_TRACE_START, name) == 0);
        CHECK(std::string(name) == "posix_trace_start");
        CHECK(posix_trace_eventid_get_name(log.get(), 4000, name) == EINVAL);
        bool listed = false;
        trace_event_id_t listed_id;
        int unavailable = 0;
        REQUIRE(posix_trace_eventtypelist_rewind(log.get()) == 0);
        while (posix_trace_eventtypelist_getnext_id(log.get(), &listed_id, &unavailable) == 0 &&
               !unavailable)
            listed |= listed_id == id;
        CHECK(listed);

        trace_attr_t log_attr;
        REQUIRE(posix_trace_get_attr(log.get(), &log_attr) == 0);
        char trace_name[TRACE_NAME_MAX];
        REQUIRE(posix_trace_attr_getname(&log_attr, trace_name) == 0);
        CHECK(std::string(trace_name) == "round-trip");
        timespec created_stream, created_log;
        posix_trace_attr_getcreatetime(&stream_attr, &created_stream);
        posix_trace_attr_getcreatetime(&log_attr, &created_log);
        CHECK(created_stream.tv_sec == created_log.tv_sec);
        CHECK(created_stream.tv_nsec == created_log.tv_nsec);
        int policy = 0;
        posix_trace_attr_getlogfullpolicy(&log_attr, &policy);
        CHECK(policy == POSIX_TRACE_APPEND);
        size_t max_data = 0;
        posix_trace_attr_getmaxdatasize(&log_attr, &max_data);
        CHECK(max_data == 8192);

        posix_trace_status_info status;
        REQUIRE(posix_trace_get_status(log.get(), &status) == 0);
        CHECK(status.posix_stream_status == POSIX_TRACE_SUSPENDED);
        CHECK(status.posix_log_full_status == POSIX_TRACE_NOT_FULL);
        CHECK(status.posix_stream_flush_error == 0);
    }
    SECTION("rewind reads it again from the oldest event")
    {
        REQUIRE(posix_trace_rewind(log.get()) == 0);
        LogRead again = read_log(log.get());
        REQUIRE(again.error == 0);
        REQUIRE(again.events.size() == read.events.size());
        for (size_t i = 0; i < again.events.size(); ++i)
            CHECK(same_event(again.events[i], read.events[i]));
    }
    SECTION("the end of the log: unavailable, for every getnext that may read a log")
    {
        auto r = get_next(log.get(), GetNext::Block);
        CHECK(r.err == 0);
        CHECK(r.unavailable != 0);
        timespec soon = realtime_in(1'000'000);
        r = get_next(log.get(), GetNext::Timed, &soon);
        CHECK(r.err == 0);
        CHECK(r.unavailable != 0);
        CHECK(get_next(log.get(), GetNext::Try).err == EINVAL); // not for a log
    }
    SECTION("a short buffer truncates the read, as for a stream")
    {
        REQUIRE(posix_trace_rewind(log.get()) == 0);
        posix_trace_event_info info;
        unsigned char small[4];
        size_t len = 0;
        int unavailable = 0;
        REQUIRE(posix_trace_getnext_event(log.get(), &info, small, sizeof small, &len,
                                          &unavailable) == 0); // the start event
        do {
            REQUIRE(posix_trace_getnext_event(log.get(), &info, small, sizeof small, &len,
                                              &unavailable) == 0);
        } while (!unavailable && info.posix_event_id != id);
        REQUIRE(posix_trace_getnext_event(log.get(), &info, small, sizeof small, &len,
                                          &unavailable) == 0); // numbered_payload(1): 37 bytes
        CHECK(len == 4);
        CHECK(info.posix_truncation_status == POSIX_TRACE_TRUNCATED_READ);
    }
}

TEST_CASE("a log is for analysis: controller calls refuse its id, and close ends it",
          "[log][self-tracing]")
{
    TempFile file;
    Attr a;
    write_user_event_log(file, 10, &a.attr);
    int fd = open(file.path().c_str(), O_RDONLY);
    trace_id_t trid;
    REQUIRE(posix_trace_open(fd, &trid) == 0);
    CHECK(posix_trace_start(trid) == EINVAL);
    CHECK(posix_trace_stop(trid) == EINVAL);
    CHECK(posix_trace_shutdown(trid) == EINVAL);
    CHECK(posix_trace_flush(trid) == EINVAL);
    CHECK(posix_trace_clear(trid) == EINVAL);
    trace_event_set_t set;
    posix_trace_eventset_empty(&set);
    CHECK(posix_trace_get_filter(trid, &set) == EINVAL);
    CHECK(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET) == EINVAL);
    trace_event_id_t id = 0;
    CHECK(posix_trace_trid_eventid_open(trid, "log.test", &id) == EINVAL);
    REQUIRE(posix_trace_close(trid) == 0);
    CHECK(posix_trace_close(trid) == EINVAL);
    CHECK(posix_trace_rewind(trid) == EINVAL);
    CHECK(get_next(trid, GetNext::Block).err == EINVAL);
    trace_attr_t attr;
    CHECK(posix_trace_get_attr(trid, &attr) == EINVAL);
    close(fd);

    SECTION("and a stream's id is not a log")
    {
        StreamGuard stream = make_stream();
        CHECK(posix_trace_rewind(stream.get()) == EINVAL);
        CHECK(posix_trace_close(stream.get()) == EINVAL);
        CHECK(posix_trace_flush(stream.get()) == EINVAL); // a stream without log
    }
    SECTION("nor is a stream with a log")
    {
        TempFile other;
        StreamGuard stream = make_logged_stream(other.fd(), &a.attr);
        CHECK(posix_trace_rewind(stream.get()) == EINVAL);
        CHECK(posix_trace_close(stream.get()) == EINVAL);
        CHECK(posix_trace_flush(stream.get()) == 0);
    }
}

TEST_CASE("posix_trace_open refuses what is not a readable trace log with EINVAL",
          "[log][self-tracing]")
{
    trace_id_t trid;
    CHECK(posix_trace_open(-1, &trid) == EINVAL);
    TempFile file;
    CHECK(posix_trace_open(file.fd(), &trid) == EINVAL); // empty
    file.write_bytes(std::vector<unsigned char>(4096, 'x'));
    {
        LogGuard log(file.path());
        CHECK(log.open_error() == EINVAL);
    }
    Attr a;
    TempFile good;
    write_user_event_log(good, 5, &a.attr);
    int write_only = open(good.path().c_str(), O_WRONLY);
    CHECK(posix_trace_open(write_only, &trid) == EINVAL);
    close(write_only);
    int readable = open(good.path().c_str(), O_RDONLY);
    CHECK(posix_trace_open(readable, nullptr) == EINVAL);
    close(readable);

    auto bytes = good.bytes();
    for (size_t offset : {size_t(0), size_t(9), size_t(12), size_t(30), size_t(100), size_t(200)}) {
        INFO("header byte " << offset << " flipped");
        auto damaged = bytes;
        damaged[offset] ^= 0x10;
        file.write_bytes(damaged);
        LogGuard log(file.path());
        CHECK(log.open_error() == EINVAL);
    }
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    CHECK(posix_trace_open(fds[0], &trid) == EINVAL);
    close(fds[0]);
    close(fds[1]);
}

TEST_CASE("posix_trace_create_withlog checks its descriptor", "[log][self-tracing]")
{
    trace_id_t trid;
    CHECK(posix_trace_create_withlog(0, nullptr, -1, &trid) == EBADF);
    TempFile file;
    int read_only = open(file.path().c_str(), O_RDONLY);
    CHECK(posix_trace_create_withlog(0, nullptr, read_only, &trid) == EBADF);
    close(read_only);
    int closed = dup(file.fd());
    close(closed);
    CHECK(posix_trace_create_withlog(0, nullptr, closed, &trid) == EBADF);

    int fds[2];
    REQUIRE(pipe(fds) == 0);
    Attr loop;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&loop.attr, POSIX_TRACE_LOOP) == 0);
    CHECK(posix_trace_create_withlog(0, &loop.attr, fds[1], &trid) == EINVAL); // LOOP rewrites
    int appending = open(file.path().c_str(), O_WRONLY | O_APPEND);
    CHECK(posix_trace_create_withlog(0, &loop.attr, appending, &trid) == EINVAL);
    close(appending);

    SECTION("a pipe takes an APPEND log, read back once it is in a file")
    {
        Attr append;
        REQUIRE(posix_trace_attr_setlogfullpolicy(&append.attr, POSIX_TRACE_APPEND) == 0);
        TempFile copy;
        std::thread reader([&] {
            unsigned char chunk[65536];
            ssize_t n;
            while ((n = read(fds[0], chunk, sizeof chunk)) > 0)
                REQUIRE(write(copy.fd(), chunk, size_t(n)) == n);
        });
        {
            StreamGuard stream = make_logged_stream(fds[1], &append.attr);
            close(fds[1]);
            fds[1] = -1;
            trace_event_id_t id = user_event("log.pipe");
            REQUIRE(posix_trace_start(stream.get()) == 0);
            for (int i = 0; i < 100; ++i)
                posix_trace_event(id, &i, sizeof i);
            REQUIRE(stream.shutdown() == 0);
        }
        reader.join();
        LogGuard log(copy.path());
        REQUIRE(log.open_error() == 0);
        LogRead read = read_log(log.get());
        CHECK(read.error == 0);
        CHECK(user_events_of(read.events, user_event("log.pipe")).size() == 100);
    }
    close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);

    SECTION("POSIX_TRACE_FLUSH needs a log")
    {
        Attr flush;
        REQUIRE(posix_trace_attr_setstreamfullpolicy(&flush.attr, POSIX_TRACE_FLUSH) == 0);
        CHECK(posix_trace_create(0, &flush.attr, &trid) == EINVAL);
    }
}

TEST_CASE("the default stream full policy is FLUSH with a log and LOOP without",
          "[log][self-tracing]")
{
    auto policy_of = [](trace_id_t trid) {
        trace_attr_t attr;
        REQUIRE(posix_trace_get_attr(trid, &attr) == 0);
        int policy = -1;
        REQUIRE(posix_trace_attr_getstreamfullpolicy(&attr, &policy) == 0);
        posix_trace_attr_destroy(&attr);
        return policy;
    };
    TempFile file;
    trace_id_t trid;
    SECTION("no attributes object")
    {
        REQUIRE(posix_trace_create_withlog(0, nullptr, file.fd(), &trid) == 0);
        StreamGuard with_log(trid);
        CHECK(policy_of(trid) == POSIX_TRACE_FLUSH);
        REQUIRE(posix_trace_create(0, nullptr, &trid) == 0);
        StreamGuard without_log(trid);
        CHECK(policy_of(trid) == POSIX_TRACE_LOOP);
    }
    SECTION("one object nobody set a policy on serves both kinds of stream")
    {
        Attr untouched;
        REQUIRE(posix_trace_create_withlog(0, &untouched.attr, file.fd(), &trid) == 0);
        StreamGuard with_log(trid);
        CHECK(policy_of(trid) == POSIX_TRACE_FLUSH);
        REQUIRE(posix_trace_create(0, &untouched.attr, &trid) == 0);
        StreamGuard without_log(trid);
        CHECK(policy_of(trid) == POSIX_TRACE_LOOP);
    }
    SECTION("a policy the user chose is kept")
    {
        Attr loop;
        REQUIRE(posix_trace_attr_setstreamfullpolicy(&loop.attr, POSIX_TRACE_LOOP) == 0);
        REQUIRE(posix_trace_create_withlog(0, &loop.attr, file.fd(), &trid) == 0);
        StreamGuard with_log(trid);
        CHECK(policy_of(trid) == POSIX_TRACE_LOOP);
    }
    SECTION("the default FLUSH stream flushes: a full stream loses nothing")
    {
        Attr small;
        REQUIRE(posix_trace_attr_setstreamsize(&small.attr, 64 * 1024) == 0);
        {
            StreamGuard stream = make_logged_stream(file.fd(), &small.attr);
            trace_event_id_t id = user_event("log.default.flush");
            REQUIRE(posix_trace_start(stream.get()) == 0);
            for (int i = 0; i < 20000; ++i) {
                posix_trace_event(id, &i, sizeof i);
                if (i % 50 == 49) // the rate of the FLUSH test below
                    usleep(1000);
            }
            REQUIRE(stream.shutdown() == 0);
        }
        LogGuard log(file.path());
        REQUIRE(log.open_error() == 0);
        LogRead read = read_log(log.get());
        REQUIRE(read.error == 0);
        auto events = user_events_of(read.events, user_event("log.default.flush"));
        REQUIRE(events.size() == 20000);
        for (int i = 0; i < 20000; ++i) {
            int value;
            REQUIRE(events[size_t(i)].data.size() == sizeof value);
            std::memcpy(&value, events[size_t(i)].data.data(), sizeof value);
            REQUIRE(value == i);
        }
    }
}

TEST_CASE("log full policies with a small log-max-size", "[log][self-tracing]")
{
    const size_t count = 3000; // about 500 KB of events
    Attr a;
    REQUIRE(posix_trace_attr_setlogsize(&a.attr, 64 * 1024) == 0);
    // The whole run fits in the stream; the log policy alone decides.
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 8u << 20) == 0);
    REQUIRE(posix_trace_attr_setmaxdatasize(&a.attr, 8192) == 0);
    TempFile file;

    SECTION("UNTIL_FULL keeps the oldest events that fit, and says the log is full")
    {
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_UNTIL_FULL) == 0);
        auto events = write_user_event_log(file, count, &a.attr);
        auto user = user_events_of(events, user_event("log.test"));
        REQUIRE(!user.empty());
        CHECK(user.size() < count);
        for (size_t i = 0; i < user.size(); ++i)
            REQUIRE(user[i].data == numbered_payload(i));
        CHECK(file.size() < 64 * 1024 + 8192);
        CHECK(status_of_log(file.path()).posix_log_full_status == POSIX_TRACE_FULL);
    }
    SECTION("LOOP keeps the newest events, overwriting the oldest")
    {
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_LOOP) == 0);
        auto events = write_user_event_log(file, count, &a.attr);
        auto user = user_events_of(events, user_event("log.test"));
        REQUIRE(!user.empty());
        CHECK(user.size() < count);
        size_t first = count - user.size();
        for (size_t i = 0; i < user.size(); ++i)
            REQUIRE(user[i].data == numbered_payload(first + i));
        CHECK(events.back().info.posix_event_id == POSIX_TRACE_STOP);
        CHECK(file.size() < 2 * 64 * 1024 + 8192);
        CHECK(status_of_log(file.path()).posix_log_overrun_status == POSIX_TRACE_OVERRUN);
    }
    SECTION("APPEND ignores log-max-size and keeps everything")
    {
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
        auto events = write_user_event_log(file, count, &a.attr);
        auto user = user_events_of(events, user_event("log.test"));
        REQUIRE(user.size() == count);
        for (size_t i = 0; i < count; ++i)
            REQUIRE(user[i].data == numbered_payload(i));
        CHECK(file.size() > 64 * 1024);
    }
}

TEST_CASE("POSIX_TRACE_FLUSH: a full stream goes to the log, nothing lost", "[log][self-tracing]")
{
    Attr a;
    REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, POSIX_TRACE_FLUSH) == 0);
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 16 * 1024) == 0);
    TempFile file;
    const size_t count = 20000;
    StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
    trace_event_id_t id = user_event("log.flush_policy");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    // About 100,000 events/s in all: a rate the in-memory stream keeps up
    // with even in the sanitizer build.
    auto emit = [id] {
        for (uint32_t i = 0; i < count; ++i) {
            posix_trace_event(id, &i, sizeof i);
            if (i % 50 == 49)
                usleep(1000);
        }
    };
    std::thread second(emit);
    emit();
    second.join();
    REQUIRE(stream.shutdown() == 0);

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get());
    REQUIRE(read.error == 0);
    size_t user = 0, flush_start = 0, flush_stop = 0;
    posix_trace_overflow_data lost{};
    for (const auto &event : read.events) {
        user += event.info.posix_event_id == id;
        flush_start += event.info.posix_event_id == POSIX_TRACE_FLUSH_START;
        flush_stop += event.info.posix_event_id == POSIX_TRACE_FLUSH_STOP;
        if (event.info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data one;
            REQUIRE(event.data.size() == sizeof one);
            std::memcpy(&one, event.data.data(), sizeof one);
            lost.lost_in_kernel += one.lost_in_kernel;
            lost.lost_in_stream += one.lost_in_stream;
        }
    }
    CHECK(lost.lost_in_stream == 0); // the policy never drops: a full stream goes to the log
    CHECK(user + lost.lost_in_kernel == 2 * count); // every event is in the log or counted
    CHECK(lost.lost_in_kernel == 0);                // and at this rate the kernel rings keep up
    CHECK(flush_start > 10);                        // 16 KiB at a time
    CHECK(flush_stop + 1 >= flush_start);
    for (size_t i = 1; i < read.events.size(); ++i)
        REQUIRE(timespec_le(read.events[i - 1].info.posix_timestamp,
                            read.events[i].info.posix_timestamp));
}

TEST_CASE("posix_trace_flush runs in the background; its end shows in the status",
          "[log][self-tracing]")
{
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    TempFile file;
    StreamGuard stream = make_logged_stream(file.fd(), &a.attr);
    trace_event_id_t id = user_event("log.flush");
    REQUIRE(posix_trace_start(stream.get()) == 0);
    for (int i = 0; i < 1000; ++i)
        posix_trace_event(id, &i, sizeof i);
    REQUIRE(posix_trace_flush(stream.get()) == 0);
    posix_trace_status_info status = status_when(stream.get(), flush_ended);
    CHECK(status.posix_stream_flush_status == POSIX_TRACE_NOT_FLUSHING);
    CHECK(status.posix_stream_flush_error == 0);
    CHECK(status.posix_stream_status == POSIX_TRACE_RUNNING);

    SECTION("the flushed events are readable while the stream runs on")
    {
        LogGuard log(file.path());
        REQUIRE(log.open_error() == 0);
        LogRead read = read_log(log.get());
        CHECK(read.error == 0);
        CHECK(user_events_of(read.events, id).size() == 1000);
        posix_trace_status_info log_status;
        REQUIRE(posix_trace_get_status(log.get(), &log_status) == 0);
        CHECK(log_status.posix_stream_status == POSIX_TRACE_SUSPENDED); // no trailer yet
    }
    SECTION("flush-start and flush-stop are in the log")
    {
        for (int i = 0; i < 10; ++i)
            posix_trace_event(id, &i, sizeof i);
        REQUIRE(stream.shutdown() == 0);
        LogGuard log(file.path());
        LogRead read = read_log(log.get());
        REQUIRE(read.error == 0);
        auto ids = ids_of(read.events);
        auto start = std::find(ids.begin(), ids.end(), POSIX_TRACE_FLUSH_START);
        auto stop = std::find(ids.begin(), ids.end(), POSIX_TRACE_FLUSH_STOP);
        REQUIRE(start != ids.end());
        REQUIRE(stop != ids.end());
        CHECK(start < stop);
        CHECK(std::count(ids.begin(), ids.end(), id) == 1010);
        CHECK(std::count(ids.begin(), start, id) == 1000);
    }
}

TEST_CASE("every event class goes through a log intact: USDT, thread, process, system",
          "[log][self-tracing]")
{
    ChildConversation app({helper_path("own_probes")});
    REQUIRE(app.read_line() == "ready\n");
    TempFile file;
    Attr a;
    REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, POSIX_TRACE_APPEND) == 0);
    trace_id_t trid;
    REQUIRE(posix_trace_create_withlog(app.pid(), &a.attr, file.fd(), &trid) == 0);
    StreamGuard stream(trid);
    size_t attached = 0;
    REQUIRE(posix_trace_usdt_attach(trid, "ownapp:*", &attached) == 0);
    REQUIRE(posix_trace_usdt_decode_string(trid, "ownapp:guarded", 2) == 0);
    REQUIRE(posix_trace_start(trid) == 0);
    app.say("go\n");
    REQUIRE(app.read_line() == "fired 500\n");
    trace_event_set_t only_td_ready; // the set filtered out
    posix_trace_eventset_empty(&only_td_ready);
    posix_trace_eventset_add(POSIX_TRACE_TD_EVENT_FIRST, &only_td_ready); // td_ready
    REQUIRE(posix_trace_set_filter(trid, &only_td_ready, POSIX_TRACE_SET_EVENTSET) == 0);
    app.say("end\n");
    int status = -1;
    REQUIRE(waitpid(app.pid(), &status, 0) == app.pid());
    usleep(50'000);
    REQUIRE(stream.shutdown() == 0);

    LogGuard log(file.path());
    REQUIRE(log.open_error() == 0);
    LogRead read = read_log(log.get(), false);
    REQUIRE(read.error == 0);
    REQUIRE(!read.events.empty());
    CHECK(read.events.front().info.posix_event_id == POSIX_TRACE_START);
    CHECK(read.events.back().info.posix_event_id == POSIX_TRACE_STOP);
    int64_t guarded = 0, plain = 0;
    bool filter_seen = false, exit_seen = false, death_seen = false;
    char name[TRACE_EVENT_NAME_MAX];
    for (const auto &event : read.events) {
        const auto &info = event.info;
        REQUIRE(posix_trace_eventid_get_name(log.get(), info.posix_event_id, name) == 0);
        std::string type = name;
        if (type == "ownapp:guarded") {
            std::vector<unsigned char> expected(3 * 8 + 5 + 1, 0);
            int64_t numbers[2] = {guarded, guarded * 2};
            std::memcpy(expected.data(), numbers, 16);
            // argument 2 is the decoded string: its 8 bytes are the pointer
            std::memcpy(expected.data() + 16, event.data.data() + 16, 8);
            std::memcpy(expected.data() + 24, "text", 5);
            expected.back() = 3;
            REQUIRE(event.data == expected);
            CHECK(info.posix_pid == app.pid());
            CHECK(info.posix_tid == app.pid());
            ++guarded;
        } else if (type == "ownapp:plain") {
            REQUIRE(event.data.size() == 8);
            int64_t value;
            std::memcpy(&value, event.data.data(), 8);
            REQUIRE(value == plain++);
        } else if (info.posix_event_id == POSIX_TRACE_FILTER) {
            REQUIRE(event.data.size() == sizeof(posix_trace_filter_data));
            posix_trace_filter_data change;
            std::memcpy(&change, event.data.data(), sizeof change);
            CHECK(std::memcmp(&change.new_filter, &only_td_ready, sizeof only_td_ready) == 0);
            filter_seen = true;
        } else if (info.posix_event_id == POSIX_TRACE_PROCESS_EXIT) {
            REQUIRE(event.data.size() == sizeof(posix_trace_process_exit_data));
            posix_trace_process_exit_data exited;
            std::memcpy(&exited, event.data.data(), sizeof exited);
            CHECK(exited.pid == app.pid());
            CHECK(exited.wait_status == status);
            exit_seen = true;
        } else if (type == "td_death") {
            CHECK(info.posix_tid == app.pid());
            death_seen = true;
        } else if (type == "td_ready" && filter_seen) {
            FAIL_CHECK("td_ready was filtered out"); // the filter reached the log's events
        }
    }
    CHECK(guarded == 500);
    CHECK(plain == 500);
    CHECK(filter_seen);
    CHECK(exit_seen);
    CHECK(death_seen);
}
