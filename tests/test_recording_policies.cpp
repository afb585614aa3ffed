// Recording: the two stream full policies (POSIX_TRACE_LOOP,
// POSIX_TRACE_UNTIL_FULL) and the loss accounting under load. Every test
// traces this process into a stream of its own.
#include "lanes_support.hpp"
#include "recording_support.hpp"

#include <posix_trace/events.h>
#include <pthread.h>
#include <trace.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace recording_support;

namespace {

posix_trace_overflow_data overflow_data(const Event &e)
{
    posix_trace_overflow_data d{};
    REQUIRE(e.data.size() == sizeof d);
    std::memcpy(&d, e.data.data(), sizeof d);
    return d;
}

posix_trace_stop_data stop_data(const std::vector<unsigned char> &bytes, size_t len)
{
    posix_trace_stop_data d{};
    REQUIRE(len == sizeof d);
    std::memcpy(&d, bytes.data(), sizeof d);
    return d;
}

} // namespace

TEST_CASE("recording: POSIX_TRACE_LOOP keeps the newest events and reports the overflow",
          "[recording][self-tracing]")
{
    Attr attr;
    REQUIRE(posix_trace_attr_setstreamsize(attr.get(), 4096) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(attr.get(), POSIX_TRACE_LOOP) == 0);
    size_t event_bytes = 0;
    REQUIRE(posix_trace_attr_getmaxusereventsize(attr.get(), 32, &event_bytes) == 0);
    REQUIRE(event_bytes > 0);
    trace_event_id_t id = user_event("rec.loop");
    StreamGuard stream = started_stream(attr);

    constexpr uint32_t kEvents = 1000;
    for (uint32_t seq = 0; seq < kEvents; ++seq) {
        unsigned char data[32];
        std::memset(data, int(seq & 0xff), sizeof data);
        std::memcpy(data, &seq, sizeof seq);
        posix_trace_event(id, data, sizeof data);
    }
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    // The overrun is reported once: get_status resets it.
    posix_trace_status_info st = status_of(stream.get());
    CHECK(st.posix_stream_overrun_status == POSIX_TRACE_OVERRUN);
    CHECK(st.posix_stream_status == POSIX_TRACE_SUSPENDED);
    st = status_of(stream.get());
    CHECK(st.posix_stream_overrun_status == POSIX_TRACE_NO_OVERRUN);

    std::vector<Event> events = read_everything(stream.get());
    REQUIRE(!events.empty());

    std::vector<uint32_t> seqs;
    uint64_t lost = 0;
    size_t others = 0; // neither overflow nor resume
    long first_user = -1, last_overflow = -1;
    bool overflow_then_resume = true;
    for (size_t i = 0; i < events.size(); ++i) {
        const Event &e = events[i];
        trace_event_id_t eid = e.info.posix_event_id;
        if (eid == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data d = overflow_data(e);
            CHECK(d.lost == d.lost_in_kernel + d.lost_in_stream);
            lost += d.lost;
            last_overflow = long(i);
            if (i + 1 >= events.size() || events[i + 1].info.posix_event_id != POSIX_TRACE_RESUME)
                overflow_then_resume = false;
        } else if (eid == POSIX_TRACE_RESUME) {
        } else {
            ++others;
            if (eid == id) {
                if (first_user < 0)
                    first_user = long(i);
                REQUIRE(e.data.size() == 32);
                seqs.push_back(payload_as<uint32_t>(e.data));
            }
        }
    }
    INFO("read " << events.size() << " events, " << seqs.size() << " user events, lost " << lost);
    REQUIRE(!seqs.empty());
    CHECK(seqs.back() == kEvents - 1);
    bool consecutive = true;
    for (size_t i = 1; i < seqs.size(); ++i)
        if (seqs[i] != seqs[i - 1] + 1)
            consecutive = false;
    CHECK(consecutive);
    // the overflow (and its resume) come before the kept events
    REQUIRE(last_overflow >= 0);
    CHECK(last_overflow < first_user);
    CHECK(overflow_then_resume);
    CHECK(events[size_t(first_user) - 1].info.posix_event_id == POSIX_TRACE_RESUME);
    CHECK(events.back().info.posix_event_id == POSIX_TRACE_STOP);
    // nothing unaccounted for: 1000 user events + start + stop
    CHECK(lost + others == kEvents + 2);
    // the kept events fit in the stream (this process's own carry no
    // namespace ids: 8 bytes fewer than the most an event of 32 bytes takes)
    CHECK(seqs.size() * (event_bytes - 8) <= 4096);
}

TEST_CASE("recording: POSIX_TRACE_UNTIL_FULL stops when full and restarts once read empty",
          "[recording][self-tracing]")
{
    Attr attr;
    REQUIRE(posix_trace_attr_setstreamsize(attr.get(), 4096) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(attr.get(), POSIX_TRACE_UNTIL_FULL) == 0);
    trace_event_id_t id = user_event("rec.until_full");
    StreamGuard stream = started_stream(attr);

    // Two bursts with a pause between them: the stream is full (and stopped)
    // well before the second burst, whose events must be counted lost too.
    constexpr uint32_t kEvents = 1000;
    for (uint32_t seq = 0; seq < kEvents; ++seq) {
        if (seq == kEvents / 2)
            std::this_thread::sleep_for(5ms);
        unsigned char data[32];
        std::memset(data, int(seq & 0xff), sizeof data);
        std::memcpy(data, &seq, sizeof seq);
        posix_trace_event(id, data, sizeof data);
    }
    std::this_thread::sleep_for(20ms);

    posix_trace_status_info st = status_of(stream.get());
    CHECK(st.posix_stream_status == POSIX_TRACE_SUSPENDED);
    CHECK(st.posix_stream_full_status == POSIX_TRACE_FULL);

    // start, user events 0..N-1, stop (stream full). Read one at a time: the
    // read that empties the stream restarts it.
    Got first = try_next(stream.get());
    REQUIRE(first.err == 0);
    REQUIRE(first.unavailable == 0);
    CHECK(first.info.posix_event_id == POSIX_TRACE_START);

    uint32_t n = 0;
    bool saw_stop = false, in_sequence = true;
    for (int guard = 0; guard < 2 * int(kEvents); ++guard) {
        Got g = try_next(stream.get());
        REQUIRE(g.err == 0);
        REQUIRE(g.unavailable == 0);
        if (g.info.posix_event_id == POSIX_TRACE_STOP) {
            posix_trace_stop_data cause = stop_data(g.data, g.data_len);
            CHECK(cause.cause == POSIX_TRACE_STOP_STREAM_FULL);
            saw_stop = true;
            break;
        }
        INFO("event " << guard << " after the start has id " << g.info.posix_event_id);
        REQUIRE(g.info.posix_event_id == id);
        REQUIRE(g.data_len == 32);
        uint32_t seq = payload_as<uint32_t>(g.data);
        if (seq != n)
            in_sequence = false;
        ++n;
    }
    REQUIRE(saw_stop);
    INFO("N = " << n << " user events kept");
    CHECK(n >= 1);
    CHECK(in_sequence);

    // Read empty: it runs again by itself.
    st = status_of(stream.get());
    CHECK(st.posix_stream_status == POSIX_TRACE_RUNNING);
    CHECK(st.posix_stream_full_status == POSIX_TRACE_NOT_FULL);

    uint32_t marker = 5000;
    posix_trace_event(id, &marker, sizeof marker);

    Got overflow = timed_next(stream.get(), 2'000'000'000LL);
    REQUIRE(overflow.err == 0);
    REQUIRE(overflow.unavailable == 0);
    CHECK(overflow.info.posix_event_id == POSIX_TRACE_OVERFLOW);
    if (overflow.info.posix_event_id == POSIX_TRACE_OVERFLOW) {
        REQUIRE(overflow.data_len == sizeof(posix_trace_overflow_data));
        posix_trace_overflow_data d{};
        std::memcpy(&d, overflow.data.data(), sizeof d);
        CHECK(d.lost_in_stream == kEvents - n);
        CHECK(d.lost_in_kernel == 0);
        CHECK(d.lost == d.lost_in_kernel + d.lost_in_stream);
    }
    Got resume = timed_next(stream.get(), 2'000'000'000LL);
    REQUIRE(resume.err == 0);
    REQUIRE(resume.unavailable == 0);
    CHECK(resume.info.posix_event_id == POSIX_TRACE_RESUME);
    Got restart = timed_next(stream.get(), 2'000'000'000LL);
    REQUIRE(restart.err == 0);
    REQUIRE(restart.unavailable == 0);
    CHECK(restart.info.posix_event_id == POSIX_TRACE_START);
    Got after = timed_next(stream.get(), 2'000'000'000LL);
    REQUIRE(after.err == 0);
    REQUIRE(after.unavailable == 0);
    CHECK(after.info.posix_event_id == id);
    REQUIRE(after.data_len == sizeof marker);
    CHECK(payload_as<uint32_t>(after.data) == marker);
}

TEST_CASE("recording: every event is read or counted lost under load", "[recording][self-tracing]")
{
    Attr attr; // defaults: POSIX_TRACE_LOOP, 8 MiB
    trace_event_id_t id = user_event("rec.load");
    StreamGuard stream = started_stream(attr);
    trace_id_t trid = stream.get();

    constexpr int kThreads = 2;
    constexpr uint64_t kPerThread = 100000;
    struct Payload {
        uint64_t seq;
        uint32_t thread;
        unsigned char pad[52];
    };
    static_assert(sizeof(Payload) == 64);

    struct Tally {
        uint64_t user = 0, start_stop = 0, lost = 0, bad_overflow = 0, bad_len = 0,
                 non_increasing = 0, other = 0;
        uint64_t last_seq[kThreads] = {};
        bool seen[kThreads] = {};
        void add(trace_event_id_t user_id, const Got &g)
        {
            trace_event_id_t eid = g.info.posix_event_id;
            if (eid == user_id) {
                ++user;
                if (g.data_len != sizeof(Payload)) {
                    ++bad_len;
                    return;
                }
                Payload p;
                std::memcpy(&p, g.data.data(), sizeof p);
                if (p.thread >= kThreads) {
                    ++bad_len;
                    return;
                }
                if (seen[p.thread] && p.seq <= last_seq[p.thread])
                    ++non_increasing;
                seen[p.thread] = true;
                last_seq[p.thread] = p.seq;
            } else if (eid == POSIX_TRACE_OVERFLOW) {
                posix_trace_overflow_data d{};
                if (g.data_len != sizeof d) {
                    ++bad_overflow;
                    return;
                }
                std::memcpy(&d, g.data.data(), sizeof d);
                if (d.lost != d.lost_in_kernel + d.lost_in_stream)
                    ++bad_overflow;
                lost += d.lost;
            } else if (eid == POSIX_TRACE_RESUME) {
            } else if (eid == POSIX_TRACE_START || eid == POSIX_TRACE_STOP) {
                ++start_stop;
            } else {
                ++other;
            }
        }
    };
    Tally tally;

    std::atomic<bool> emitters_done{false};
    std::atomic<uint64_t> reader_errors{0};
    std::thread reader([&] {
        while (!emitters_done.load(std::memory_order_acquire)) {
            Got g = timed_next(trid, 20'000'000LL);
            if (g.err == ETIMEDOUT)
                continue;
            if (g.err != 0 || g.unavailable) {
                reader_errors++;
                continue;
            }
            tally.add(id, g);
        }
    });
    std::vector<std::thread> emitters;
    for (int t = 0; t < kThreads; ++t)
        emitters.emplace_back([&, t] {
            Payload p{};
            p.thread = uint32_t(t);
            std::memset(p.pad, 0x5A, sizeof p.pad);
            for (uint64_t seq = 0; seq < kPerThread; ++seq) {
                p.seq = seq;
                posix_trace_event(id, &p, sizeof p);
            }
        });
    for (auto &t : emitters)
        t.join();
    emitters_done.store(true, std::memory_order_release);
    reader.join();
    REQUIRE(posix_trace_stop(trid) == 0);
    uint64_t read_concurrently = tally.user;
    for (int guard = 0; guard < 10'000'000; ++guard) {
        Got g = try_next(trid);
        REQUIRE(g.err == 0);
        if (g.unavailable)
            break;
        tally.add(id, g);
    }

    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(trid, &counters) == 0);

    INFO("user events read: " << tally.user << " (" << read_concurrently
                              << " while recording), start/stop read: " << tally.start_stop
                              << ", overflow lost sum: " << tally.lost << "; counters: recorded "
                              << counters.recorded << ", lost_in_kernel " << counters.lost_in_kernel
                              << ", lost_in_stream " << counters.lost_in_stream);
    CHECK(reader_errors.load() == 0);
    CHECK(tally.bad_len == 0);
    CHECK(tally.bad_overflow == 0);
    CHECK(tally.other == 0);
    CHECK(tally.non_increasing == 0);
    // Every event emitted (200,000 user events, plus the start and stop
    // events) was either read or counted in an overflow event. (If the start
    // event itself was overwritten it is among the lost.)
    CHECK(tally.user + tally.start_stop + tally.lost == kThreads * kPerThread + 2);
    CHECK(tally.user <= kThreads * kPerThread);
    // The counters account for the same losses.
    CHECK(counters.lost_in_kernel + counters.lost_in_stream == tally.lost);
    CHECK(counters.recorded >= tally.user + tally.start_stop);
}

TEST_CASE("recording: the losses of a flood the drain is late for are counted exactly",
          "[recording][self-tracing]")
{
    Attr attr;
    REQUIRE(posix_trace_attr_setmaxdatasize(attr.get(), 4096) == 0);
    REQUIRE(posix_trace_attr_setstreamsize(attr.get(), 64 * 1024) == 0); // ring: 256 KiB per CPU
    trace_event_id_t id = user_event("rec.kernel_loss");
    StreamGuard stream = started_stream(attr);

    pid_t drain_tid = 0;
    for (const auto &entry : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(entry.path() / "comm");
        std::string name;
        std::getline(comm, name);
        if (name == "posixtrace-drn")
            drain_tid = std::stoi(entry.path().filename());
    }
    REQUIRE(drain_tid != 0);
    cpu_set_t cpu0;
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    REQUIRE(sched_setaffinity(drain_tid, sizeof cpu0, &cpu0) == 0);

    // 4 KiB each: 40 MiB, beyond the kernel's ring and the 32 MiB the lanes
    // of a small stream may hold
    constexpr uint32_t kEvents = 10'000;
    std::thread emitter([&] {
        pthread_setaffinity_np(pthread_self(), sizeof cpu0, &cpu0);
        sched_param fifo{1};
        bool realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;
        std::vector<unsigned char> payload(4096, 0x5a);
        for (uint32_t seq = 0; seq < kEvents; ++seq) {
            std::memcpy(payload.data(), &seq, sizeof seq);
            posix_trace_event(id, payload.data(), payload.size());
        }
        if (realtime) {
            sched_param normal{0};
            pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
        }
    });
    emitter.join();
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    uint64_t read = 0, system_read = 0, lost = 0, kernel_lost = 0;
    uint32_t last_seq = 0;
    bool increasing = true;
    for (;;) {
        Got g = try_next(stream.get(), 8192);
        REQUIRE(g.err == 0);
        if (g.unavailable)
            break;
        if (g.info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            posix_trace_overflow_data d{};
            REQUIRE(g.data_len == sizeof d);
            std::memcpy(&d, g.data.data(), sizeof d);
            lost += d.lost;
            kernel_lost += d.lost_in_kernel;
        } else if (g.info.posix_event_id == id) {
            REQUIRE(g.data_len == 4096);
            uint32_t seq = payload_as<uint32_t>(g.data);
            if (read && seq <= last_seq)
                increasing = false;
            last_seq = seq;
            ++read;
        } else if (g.info.posix_event_id != POSIX_TRACE_RESUME) {
            ++system_read; // start (unless overwritten) and stop
        }
    }
    INFO("read " << read << " + " << system_read << " system, lost " << lost << " (in the kernel "
                 << kernel_lost << ")");
    // Neither the lanes nor the kernel's loop rings (the uprobe path) fill
    // under this stream's POSIX_TRACE_LOOP: they make room by their oldest
    // records, a loss of the stream's.
    CHECK(kernel_lost == 0); // no ring dropped its newest
    CHECK(lost > kernel_lost);
    CHECK(read > 0);
    // Every event generated is read or counted lost: the user events, and the
    // start and stop events (the small LOOP stream may overwrite the start).
    CHECK(read + system_read + lost == kEvents + 2);
    CHECK(increasing);
    posix_trace_counters counters{};
    REQUIRE(posix_trace_get_counters(stream.get(), &counters) == 0);
    CHECK(counters.lost_in_kernel == kernel_lost);
    // By cause: the ring was full (these events are no thread events, so no
    // switch the kernel hid can be among them).
    posix_trace_loss_counters losses{};
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.ring_full + losses.runs_skipped == kernel_lost);
    CHECK(losses.switches_unreported == 0);
    CHECK(losses.overwritten + losses.refused + losses.late == counters.lost_in_stream);
    CHECK(losses.late == 0);
}

TEST_CASE("recording: loss counters by cause and skipped program runs; EINVAL",
          "[recording][self-tracing]")
{
    Attr attr;
    StreamGuard stream = started_stream(attr);
    posix_trace_loss_counters losses;
    std::memset(&losses, 0xff, sizeof losses);
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.ring_full == 0);
    CHECK(losses.overwritten == 0);
    CHECK(losses.refused == 0);
    CHECK(losses.late == 0);
    CHECK(posix_trace_get_loss_counters(stream.get(), nullptr) == EINVAL);
    CHECK(posix_trace_get_loss_counters(trace_id_t(0x7fffffff), &losses) == EINVAL);

    // Every loaded program, by name; the sum of their skipped runs is what
    // the stream counts (and reports) as runs_skipped.
    size_t count = 0;
    REQUIRE(posix_trace_get_skipped_runs(stream.get(), nullptr, 0, &count) == 0);
    REQUIRE(count >= 4);
    std::vector<posix_trace_program_runs> programs(count);
    size_t again = 0;
    REQUIRE(posix_trace_get_skipped_runs(stream.get(), programs.data(), programs.size(), &again) ==
            0);
    CHECK(again == count);
    std::set<std::string> names;
    uint64_t skipped = 0;
    for (const auto &program : programs) {
        names.insert(program.program);
        skipped += program.skipped;
    }
    CHECK(names.count("user_event") == 1);
    // the tp_btf program, or its raw_tp twin on a kernel whose BTF lacks the
    // tracepoint (program names are cut at 15 characters)
    CHECK(names.count("td_sched_switch") + names.count("td_sched_switch_raw") == 1);
    CHECK(names.count("process_fork") + names.count("process_fork_raw") == 1);
    REQUIRE(posix_trace_stop(stream.get()) == 0); // a pass reads the misses
    REQUIRE(posix_trace_get_loss_counters(stream.get(), &losses) == 0);
    CHECK(losses.runs_skipped <= skipped);
    posix_trace_program_runs one{};
    REQUIRE(posix_trace_get_skipped_runs(stream.get(), &one, 1, &again) == 0); // a short array
    CHECK(again == count);
    CHECK(one.program[0] != 0);
    CHECK(posix_trace_get_skipped_runs(stream.get(), nullptr, 1, &again) == EINVAL);
    CHECK(posix_trace_get_skipped_runs(stream.get(), &one, 1, nullptr) == EINVAL);
    CHECK(posix_trace_get_skipped_runs(trace_id_t(0x7fffffff), &one, 1, &again) == EINVAL);
}

// A stream that stopped itself because it was full, then stopped explicitly:
// no automatic restart, but once read empty it is no longer full, and
// posix_trace_start runs it again.
TEST_CASE("recording: UNTIL_FULL stopped by the user while full can be started again",
          "[recording][self-tracing]")
{
    Attr attr;
    REQUIRE(posix_trace_attr_setstreamsize(attr.get(), 4096) == 0);
    REQUIRE(posix_trace_attr_setstreamfullpolicy(attr.get(), POSIX_TRACE_UNTIL_FULL) == 0);
    trace_event_id_t id = user_event("rec.until_full_then_stop");
    StreamGuard stream = started_stream(attr);
    unsigned char data[32] = {};
    for (int i = 0; i < 200; ++i)
        posix_trace_event(id, data, sizeof data);
    std::this_thread::sleep_for(20ms);
    REQUIRE(status_of(stream.get()).posix_stream_full_status == POSIX_TRACE_FULL);
    REQUIRE(posix_trace_stop(stream.get()) == 0); // suspended already: no event
    // POSIX: start on a full stream records nothing and changes nothing.
    REQUIRE(posix_trace_start(stream.get()) == 0);
    posix_trace_status_info full = status_of(stream.get());
    CHECK(full.posix_stream_status == POSIX_TRACE_SUSPENDED);
    CHECK(full.posix_stream_full_status == POSIX_TRACE_FULL);

    uint64_t delivered = 0;
    int starts = 0, stops = 0;
    for (;;) {
        Got g = try_next(stream.get());
        REQUIRE(g.err == 0);
        if (g.unavailable)
            break;
        delivered += g.info.posix_event_id == id;
        starts += g.info.posix_event_id == POSIX_TRACE_START;
        stops += g.info.posix_event_id == POSIX_TRACE_STOP;
    }
    CHECK(starts == 1); // the first start only
    CHECK(stops == 1);  // the automatic stop only
    posix_trace_status_info st = status_of(stream.get());
    CHECK(st.posix_stream_status == POSIX_TRACE_SUSPENDED); // no automatic restart
    CHECK(st.posix_stream_full_status == POSIX_TRACE_NOT_FULL);

    REQUIRE(posix_trace_start(stream.get()) == 0);
    CHECK(status_of(stream.get()).posix_stream_status == POSIX_TRACE_RUNNING);
    uint32_t marker = 77;
    posix_trace_event(id, &marker, sizeof marker);
    // Every event of the 200 is either delivered or reported lost, before
    // the start event.
    Got start = timed_next(stream.get(), 2'000'000'000LL);
    REQUIRE(start.err == 0);
    uint64_t lost = 0;
    if (start.info.posix_event_id == POSIX_TRACE_OVERFLOW) {
        lost = payload_as<posix_trace_overflow_data>(start.data).lost;
        Got resume = timed_next(stream.get(), 2'000'000'000LL);
        REQUIRE(resume.err == 0);
        CHECK(resume.info.posix_event_id == POSIX_TRACE_RESUME);
        start = timed_next(stream.get(), 2'000'000'000LL);
        REQUIRE(start.err == 0);
    }
    CHECK(delivered + lost == 200);
    CHECK(start.info.posix_event_id == POSIX_TRACE_START);
    Got after = timed_next(stream.get(), 2'000'000'000LL);
    REQUIRE(after.err == 0);
    CHECK(after.info.posix_event_id == id);
    CHECK(payload_as<uint32_t>(after.data) == marker);
}
