// libFuzzer target for the trace log reader (userspace/lib/log/log_reader.cpp)
// through the public API: posix_trace_open on a memfd holding the input, then
// everything a reader of a log may call, checking what must hold for any
// file. `make fuzz` builds it (clang, ASan+UBSan); scripts/fuzz.sh runs it.
//
// Every structure of a log is covered by a CRC-32, which random mutations
// almost never keep right: each input is tried as is (the checks that refuse
// damage) and then, when that changes it, with its header, block, trailer and
// footer CRCs recomputed where the reader will look for them, so that the
// mutated fields themselves reach the parser.
#include "fuzz_check.hpp"
#include <fcntl.h>
#include <posix_trace/events.h>
#include <sys/mman.h>
#include <time.h>
#include <trace.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

constexpr size_t kMaxCalls = 100000;     // getnext calls per pass
constexpr size_t kComparedEvents = 1024; // compared again after rewind
constexpr size_t kFullBuffer = 8192;     // the largest event data (kMaxEventData)
constexpr size_t kBufferSizes[] = {0, 7, kFullBuffer};

// ---- CRC fix-up --------------------------------------------------------------

uint32_t load32(const uint8_t *at)
{
    return uint32_t(at[0]) | uint32_t(at[1]) << 8 | uint32_t(at[2]) << 16 | uint32_t(at[3]) << 24;
}
uint64_t load64(const uint8_t *at)
{
    return uint64_t(load32(at)) | uint64_t(load32(at + 4)) << 32;
}
void store32(uint8_t *at, uint32_t value)
{
    for (int i = 0; i < 4; ++i)
        at[i] = uint8_t(value >> (8 * i));
}
uint32_t crc_of(const uint8_t *bytes, size_t length)
{
    return uint32_t(crc32(crc32(0L, Z_NULL, 0), bytes, uInt(length)));
}

constexpr uint8_t kHeaderMagic[8] = {'P', 'T', 'R', 'C', 'L', 'O', 'G', 0};
constexpr uint8_t kFooterMagic[8] = {'P', 'T', 'E', 'N', 'D', 0, 0, 0};
constexpr uint32_t kBlockMagic = 0x4B425450;   // "PTBK"
constexpr uint32_t kTrailerMagic = 0x52545450; // "PTTR"
constexpr size_t kHeaderFixed = 224, kBlockHeader = 40, kTrailerFixed = 96, kFooter = 24;
constexpr size_t kMaxFixedBlocks = 100000;

// Sets the CRC of the block at `offset` if its header and payload are in the
// file; returns the block's length, or 0.
size_t fix_block(std::vector<uint8_t> &b, uint64_t offset, uint64_t room)
{
    size_t n = b.size();
    if (offset > n || n - offset < kBlockHeader || room < kBlockHeader)
        return 0;
    uint8_t *block = b.data() + offset;
    if (load32(block) != kBlockMagic)
        return 0;
    uint64_t payload = load32(block + 16);
    if (payload > room - kBlockHeader || payload > n - offset - kBlockHeader)
        return 0;
    store32(block + 4, crc_of(block + 8, size_t(kBlockHeader - 8 + payload)));
    return size_t(kBlockHeader + payload);
}

void fix_crcs(std::vector<uint8_t> &b)
{
    size_t n = b.size();
    if (n < kHeaderFixed + 8 || std::memcmp(b.data(), kHeaderMagic, 8) != 0)
        return;
    uint32_t header_size = load32(b.data() + 12);
    uint64_t data_offset = load64(b.data() + 16);
    uint32_t slot_size = load32(b.data() + 28);

    // Blocks: LOOP slots, or one after the other from data_offset.
    if (data_offset <= n) {
        if (slot_size) {
            for (uint64_t slot = 0; slot < kMaxFixedBlocks; ++slot) {
                uint64_t offset = data_offset + slot * uint64_t(slot_size);
                if (offset >= n)
                    break;
                fix_block(b, offset, slot_size);
            }
        } else {
            uint64_t offset = data_offset;
            for (size_t i = 0; i < kMaxFixedBlocks; ++i) {
                size_t length = fix_block(b, offset, n - offset);
                if (!length)
                    break;
                offset += length;
            }
        }
    }

    // Footer, and the trailer it points to.
    if (n >= kFooter) {
        uint8_t *footer = b.data() + n - kFooter;
        if (std::memcmp(footer, kFooterMagic, 8) == 0) {
            store32(footer + 16, crc_of(footer, 16));
            uint64_t offset = load64(footer + 8);
            uint64_t limit = n - kFooter;
            if (offset <= limit && limit - offset >= kTrailerFixed &&
                load32(b.data() + offset) == kTrailerMagic) {
                uint32_t size = load32(b.data() + offset + 8);
                if (size >= 8 && size <= limit - offset)
                    store32(b.data() + offset + 4, crc_of(b.data() + offset + 8, size - 8));
            }
        }
    }

    // The header last: a damaged layout may overlap it with the rest.
    if (header_size >= 8 && header_size <= n)
        store32(b.data() + header_size - 4, crc_of(b.data(), header_size - 4));
}

// ---- reading -------------------------------------------------------------------

struct Outcome {
    int rc;
    int unavailable;
    posix_trace_event_info info;
    size_t capacity;
    size_t data_len;
    std::vector<uint8_t> data; // the first pass's bytes (events < kComparedEvents)
};

bool same_event_header(const posix_trace_event_info &a, const posix_trace_event_info &b)
{
    return a.posix_event_id == b.posix_event_id && a.posix_pid == b.posix_pid &&
           a.posix_tid == b.posix_tid && a.posix_thread_id == b.posix_thread_id &&
           a.posix_prog_address == b.posix_prog_address &&
           a.posix_timestamp.tv_sec == b.posix_timestamp.tv_sec &&
           a.posix_timestamp.tv_nsec == b.posix_timestamp.tv_nsec;
}

enum class Call { Next, Timed };

// One getnext / timedgetnext with a buffer of exactly `capacity` bytes on the
// heap (ASan sees a byte written past it), or no buffer at all (`data` null,
// `num_bytes` 0), checking the invariants of one call.
Outcome read_one(trace_id_t trid, Call call, size_t capacity, bool keep_data,
                 bool no_buffer = false)
{
    Outcome out{};
    if (no_buffer)
        capacity = 0;
    out.capacity = capacity;
    std::unique_ptr<uint8_t[]> buffer(no_buffer ? nullptr : new uint8_t[capacity]);
    if (buffer)
        std::memset(buffer.get(), 0xA5, capacity);
    std::memset(&out.info, 0xCC, sizeof out.info);
    size_t data_len = ~size_t(0);
    int unavailable = -1;
    if (call == Call::Next) {
        out.rc = posix_trace_getnext_event(trid, &out.info, buffer.get(), capacity, &data_len,
                                           &unavailable);
    } else {
        timespec abstime{};
        clock_gettime(CLOCK_REALTIME, &abstime);
        abstime.tv_sec += 1; // a log never waits: its events are there or it has ended
        out.rc = posix_trace_timedgetnext_event(trid, &out.info, buffer.get(), capacity, &data_len,
                                                &unavailable, &abstime);
    }
    FUZZ_CHECK(out.rc == 0 || out.rc == EINVAL);
    if (out.rc == 0) {
        FUZZ_CHECK(unavailable == 0 || unavailable == 1);
    }
    out.unavailable = unavailable;
    if (out.rc == 0 && unavailable == 0) {
        const posix_trace_event_info &info = out.info;
        FUZZ_CHECK(data_len <= capacity);
        if (no_buffer)
            FUZZ_CHECK(data_len == 0);
        FUZZ_CHECK(info.posix_event_id < POSIX_TRACE_EVENT_ID_LIMIT);
        FUZZ_CHECK(info.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED ||
                   info.posix_truncation_status == POSIX_TRACE_TRUNCATED_RECORD ||
                   info.posix_truncation_status == POSIX_TRACE_TRUNCATED_READ);
        // Cut by the reader only when the buffer was too small, and then to fill it.
        if (info.posix_truncation_status == POSIX_TRACE_TRUNCATED_READ)
            FUZZ_CHECK(data_len == capacity);
        FUZZ_CHECK(info.posix_timestamp.tv_nsec >= 0 && info.posix_timestamp.tv_nsec < 1000000000);
        out.data_len = data_len;
        if (keep_data && data_len)
            out.data.assign(buffer.get(), buffer.get() + data_len);
        // Whatever ids the log claims for it are answered, or none.
        posix_trace_namespace_ids ids{};
        int ids_rc = posix_trace_event_namespace_ids(trid, &ids);
        FUZZ_CHECK(ids_rc == 0 || ids_rc == ENODATA);
        // Any id an event carries may be asked for by name; a name found fits.
        char name[TRACE_EVENT_NAME_MAX + 16];
        std::memset(name, 0x5A, sizeof name);
        if (posix_trace_eventid_get_name(trid, info.posix_event_id, name) == 0)
            FUZZ_CHECK(strnlen(name, sizeof name) < TRACE_EVENT_NAME_MAX);
    }
    return out;
}

void check_trygetnext_refused(trace_id_t trid)
{
    posix_trace_event_info info;
    uint8_t data[16];
    size_t data_len = 0;
    int unavailable = 0;
    FUZZ_CHECK(posix_trace_trygetnext_event(trid, &info, data, sizeof data, &data_len,
                                            &unavailable) == EINVAL);
}

// The event type list: ids strictly increasing, below the limit, each named.
void walk_event_types(trace_id_t trid)
{
    FUZZ_CHECK(posix_trace_eventtypelist_rewind(trid) == 0);
    bool first = true;
    trace_event_id_t previous = 0;
    for (size_t i = 0;; ++i) {
        FUZZ_CHECK(i <= POSIX_TRACE_EVENT_ID_LIMIT);
        trace_event_id_t id = 0;
        int unavailable = -1;
        FUZZ_CHECK(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0);
        FUZZ_CHECK(unavailable == 0 || unavailable == 1);
        if (unavailable)
            break;
        FUZZ_CHECK(id < POSIX_TRACE_EVENT_ID_LIMIT);
        FUZZ_CHECK(first || id > previous);
        first = false;
        previous = id;
        char name[TRACE_EVENT_NAME_MAX + 16];
        std::memset(name, 0x5A, sizeof name);
        FUZZ_CHECK(posix_trace_eventid_get_name(trid, id, name) == 0);
        FUZZ_CHECK(strnlen(name, sizeof name) < TRACE_EVENT_NAME_MAX);
    }
    // At the end it stays at the end until rewound.
    trace_event_id_t id = 0;
    int unavailable = 0;
    FUZZ_CHECK(posix_trace_eventtypelist_getnext_id(trid, &id, &unavailable) == 0 &&
               unavailable == 1);
}

void check_attributes_and_status(trace_id_t trid)
{
    trace_attr_t attr;
    FUZZ_CHECK(posix_trace_attr_init(&attr) == 0);
    FUZZ_CHECK(posix_trace_get_attr(trid, &attr) == 0);
    char name[TRACE_NAME_MAX + 16];
    std::memset(name, 0x5A, sizeof name);
    FUZZ_CHECK(posix_trace_attr_getname(&attr, name) == 0);
    FUZZ_CHECK(strnlen(name, sizeof name) < TRACE_NAME_MAX);
    char version[TRACE_NAME_MAX + 16];
    std::memset(version, 0x5A, sizeof version);
    FUZZ_CHECK(posix_trace_attr_getgenversion(&attr, version) == 0);
    FUZZ_CHECK(strnlen(version, sizeof version) < TRACE_NAME_MAX);
    int policy = 0;
    FUZZ_CHECK(posix_trace_attr_getlogfullpolicy(&attr, &policy) == 0);
    FUZZ_CHECK(posix_trace_attr_getstreamfullpolicy(&attr, &policy) == 0);
    FUZZ_CHECK(posix_trace_attr_getinherited(&attr, &policy) == 0);
    size_t size = 0;
    FUZZ_CHECK(posix_trace_attr_getlogsize(&attr, &size) == 0);
    FUZZ_CHECK(posix_trace_attr_getmaxdatasize(&attr, &size) == 0);
    FUZZ_CHECK(posix_trace_attr_getstreamsize(&attr, &size) == 0);
    timespec time{};
    FUZZ_CHECK(posix_trace_attr_getcreatetime(&attr, &time) == 0);
    FUZZ_CHECK(time.tv_nsec >= 0 && time.tv_nsec < 1000000000);
    FUZZ_CHECK(posix_trace_attr_getclockres(&attr, &time) == 0);
    FUZZ_CHECK(posix_trace_attr_destroy(&attr) == 0);

    posix_trace_status_info status;
    FUZZ_CHECK(posix_trace_get_status(trid, &status) == 0);
    posix_trace_status_info again;
    FUZZ_CHECK(posix_trace_get_status(trid, &again) == 0);
    // A log's status is the completed stream's: reading it does not reset it.
    FUZZ_CHECK(std::memcmp(&status, &again, sizeof status) == 0);
}

// Reads the whole log with buffers of 0, 7 and 8192 bytes in turn (every
// other 0 without a buffer), some calls through timedgetnext; checks that the
// end and damage are sticky.
std::vector<Outcome> first_pass(trace_id_t trid)
{
    std::vector<Outcome> outcomes;
    for (size_t i = 0; i < kMaxCalls; ++i) {
        if (i % 50 == 25)
            check_trygetnext_refused(trid); // and it does not consume an event
        Call call = i % 5 == 4 ? Call::Timed : Call::Next;
        size_t capacity = kBufferSizes[i % std::size(kBufferSizes)];
        bool no_buffer = capacity == 0 && i / std::size(kBufferSizes) % 2;
        outcomes.push_back(
            read_one(trid, call, capacity, outcomes.size() < kComparedEvents, no_buffer));
        const Outcome &last = outcomes.back();
        if (last.rc == 0 && last.unavailable == 0)
            continue;
        // The end, or damage: the next calls say the same.
        for (int k = 0; k < 2; ++k) {
            Outcome again = read_one(trid, k ? Call::Timed : Call::Next, kFullBuffer, false);
            FUZZ_CHECK(again.rc == last.rc);
            if (last.rc == 0)
                FUZZ_CHECK(again.unavailable == 1);
        }
        break;
    }
    return outcomes;
}

// After a rewind the log reads the same: every event of the first pass again
// (compared with its whole data), and the same end or damage at the same place.
void second_pass(trace_id_t trid, const std::vector<Outcome> &first, size_t count)
{
    count = std::min(count, first.size());
    for (size_t i = 0; i < count; ++i) {
        const Outcome &was = first[i];
        Outcome now = read_one(trid, i % 2 ? Call::Timed : Call::Next, kFullBuffer, true);
        FUZZ_CHECK(now.rc == was.rc);
        if (was.rc != 0)
            return;
        FUZZ_CHECK(now.unavailable == was.unavailable);
        if (was.unavailable)
            return;
        FUZZ_CHECK(same_event_header(now.info, was.info));
        // The first pass read a prefix of the data, cut to its buffer.
        FUZZ_CHECK(was.data_len == std::min(now.data_len, was.capacity));
        if (now.data_len > was.capacity) {
            FUZZ_CHECK(was.info.posix_truncation_status == POSIX_TRACE_TRUNCATED_READ);
        } else {
            FUZZ_CHECK(was.info.posix_truncation_status == now.info.posix_truncation_status);
        }
        FUZZ_CHECK(now.info.posix_truncation_status != POSIX_TRACE_TRUNCATED_READ);
        if (i < kComparedEvents)
            FUZZ_CHECK(was.data.size() == was.data_len &&
                       (was.data_len == 0 ||
                        std::memcmp(was.data.data(), now.data.data(), was.data_len) == 0));
    }
}

void exercise(const uint8_t *data, size_t size)
{
    int fd = memfd_create("log_reader_fuzzer", MFD_CLOEXEC);
    if (fd < 0) {
        char name[] = "/tmp/log_reader_fuzzer-XXXXXX";
        fd = mkstemp(name);
        FUZZ_CHECK(fd >= 0);
        unlink(name);
    }
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, data + done, size - done);
        FUZZ_CHECK(n > 0);
        done += size_t(n);
    }
    FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);

    trace_id_t trid = 0;
    int err = posix_trace_open(fd, &trid);
    FUZZ_CHECK(err == 0 || err == EINVAL);
    if (err) {
        close(fd);
        return;
    }
    close(fd); // the log keeps its own descriptor

    check_attributes_and_status(trid);
    walk_event_types(trid);
    check_trygetnext_refused(trid);

    std::vector<Outcome> first = first_pass(trid);
    check_trygetnext_refused(trid);
    walk_event_types(trid); // blocks name the event types they use

    FUZZ_CHECK(posix_trace_rewind(trid) == 0);
    second_pass(trid, first, first.size());
    // A rewind in the middle starts over again.
    FUZZ_CHECK(posix_trace_rewind(trid) == 0);
    second_pass(trid, first, 3);
    check_attributes_and_status(trid);

    FUZZ_CHECK(posix_trace_close(trid) == 0);
    // Gone: every call on the id is refused.
    FUZZ_CHECK(posix_trace_close(trid) == EINVAL);
    FUZZ_CHECK(posix_trace_rewind(trid) == EINVAL);
    posix_trace_event_info info;
    size_t data_len = 0;
    int unavailable = 0;
    FUZZ_CHECK(posix_trace_getnext_event(trid, &info, nullptr, 0, &data_len, &unavailable) ==
               EINVAL);
    posix_trace_status_info status;
    FUZZ_CHECK(posix_trace_get_status(trid, &status) == EINVAL);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    exercise(data, size);
    std::vector<uint8_t> fixed(data, data + size);
    fix_crcs(fixed);
    if (size && std::memcmp(fixed.data(), data, size) != 0)
        exercise(fixed.data(), fixed.size());
    return 0;
}
