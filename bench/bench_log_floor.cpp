// What the tracer's side must spend at the least, per event, to put in a log
// the events a thread on another CPU writes: no posixtrace code, only the
// memory and system calls that any design of that path pays.
//   bench_log_floor DIR
// Prints one line of key=value, CPU ns per event of 64 bytes:
//   take_whole: copying each 64 KiB chunk of records another thread just
//     wrote (the lanes' layout: a ring header, pt_record, the data);
//   take_each: reading each record there and writing it out in the log's
//     layout instead;
//   checksum: the log's CRC-32 (libdeflate) over blocks of such records;
//   write: write() of those blocks into a new file in DIR.
#include <fcntl.h>
#include <libdeflate.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "posixtrace.h"

namespace {

constexpr size_t kEvents = 2'000'000;
constexpr size_t kDataBytes = 64;
constexpr size_t kChunkBytes = 64 * 1024;
constexpr size_t kRecordBytes = 8 + sizeof(pt_record) + kDataBytes; // a lane's record
constexpr size_t kLoggedBytes = 48 + kDataBytes;                    // the log's record
constexpr size_t kRecordsPerChunk = kChunkBytes / kRecordBytes;
constexpr size_t kChunksInFlight = 16;
constexpr size_t kBlockBytes = 256 * 1024;

uint64_t thread_cpu_ns()
{
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return uint64_t(now.tv_sec) * 1'000'000'000 + uint64_t(now.tv_nsec);
}

// One thread writes chunks of records, as a lane does; this one takes each
// chunk as soon as it is whole. Returns the CPU ns an event spent taking
// them, the waits for the writer left out.
double take_chunks(bool whole)
{
    std::vector<uint8_t> chunks(kChunksInFlight * kChunkBytes);
    std::vector<uint8_t> out(12u << 20);
    std::atomic<uint64_t> written{0}, taken{0};
    uint64_t total = kEvents / kRecordsPerChunk;
    std::thread writer([&] {
        uint8_t data[kDataBytes];
        std::memset(data, 0xab, sizeof data);
        for (uint64_t chunk = 0; chunk < total; ++chunk) {
            while (chunk - taken.load(std::memory_order_acquire) >= kChunksInFlight) {
            }
            uint8_t *at = &chunks[(chunk % kChunksInFlight) * kChunkBytes];
            for (size_t i = 0; i < kRecordsPerChunk; ++i, at += kRecordBytes) {
                pt_record record{};
                timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                record.timestamp_ns = uint64_t(now.tv_nsec);
                record.data_len = kDataBytes;
                uint32_t length = sizeof record + kDataBytes;
                std::memcpy(at, &length, sizeof length);
                std::memcpy(at + 8, &record, sizeof record);
                std::memcpy(at + 8 + sizeof record, data, kDataBytes);
            }
            written.store(chunk + 1, std::memory_order_release);
        }
    });
    uint64_t spent = 0;
    size_t out_at = 0;
    for (uint64_t chunk = 0; chunk < total; ++chunk) {
        while (written.load(std::memory_order_acquire) <= chunk) {
        }
        uint64_t began = thread_cpu_ns();
        const uint8_t *from = &chunks[(chunk % kChunksInFlight) * kChunkBytes];
        if (out_at + kChunkBytes > out.size())
            out_at = 0;
        if (whole) {
            std::memcpy(&out[out_at], from, kChunkBytes);
            out_at += kChunkBytes;
        } else {
            for (size_t i = 0; i < kRecordsPerChunk; ++i, from += kRecordBytes) {
                pt_record record;
                std::memcpy(&record, from + 8, sizeof record);
                uint8_t *to = &out[out_at];
                uint32_t size = kLoggedBytes;
                std::memcpy(to, &size, sizeof size);
                std::memcpy(to + 8, &record.event_id, 8);
                std::memcpy(to + 16, &record.timestamp_ns, 8);
                std::memcpy(to + 24, &record.pid, 8);
                std::memcpy(to + 32, &record.thread_id, 16);
                std::memcpy(to + 48, from + 8 + sizeof record, kDataBytes);
                out_at += kLoggedBytes;
            }
        }
        // The copy is kept, as a log writer would read it.
        asm volatile("" : : "r"(out.data()) : "memory");
        spent += thread_cpu_ns() - began;
        taken.store(chunk + 1, std::memory_order_release);
    }
    writer.join();
    return double(spent) / double(total * kRecordsPerChunk);
}

// As the log writer does: the block's CRC-32 in its header.
void store_crc(std::vector<uint8_t> &block, uint32_t crc)
{
    std::memcpy(block.data() + 4, &crc, sizeof crc);
}

// The log writer's own part: a checksum and a write() per block.
bool checksum_and_write(const std::string &dir, double &checksum_ns, double &write_ns)
{
    std::string path = dir + "/bench-log-floor.XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0)
        return false;
    std::vector<uint8_t> block(kBlockBytes, 0xab);
    size_t blocks = kEvents * kLoggedBytes / kBlockBytes;
    uint64_t summed = 0, wrote = 0;
    bool ok = true;
    for (size_t i = 0; i < blocks && ok; ++i) {
        uint64_t began = thread_cpu_ns();
        store_crc(block, libdeflate_crc32(0, block.data() + 8, block.size() - 8));
        uint64_t checked = thread_cpu_ns();
        ok = write(fd, block.data(), block.size()) == ssize_t(block.size());
        wrote += thread_cpu_ns() - checked;
        summed += checked - began;
    }
    close(fd);
    unlink(path.c_str());
    checksum_ns = double(summed) / double(kEvents);
    write_ns = double(wrote) / double(kEvents);
    return ok;
}

} // namespace

int main(int argc, char **argv)
{
    std::string dir = argc > 1 ? argv[1] : "/tmp";
    double whole = take_chunks(true);
    double each = take_chunks(false);
    double checksum = 0, write = 0;
    if (!checksum_and_write(dir, checksum, write)) {
        std::fprintf(stderr, "bench_log_floor: cannot write in %s\n", dir.c_str());
        return 1;
    }
    std::printf("take_whole=%.1f take_each=%.1f checksum=%.1f write=%.1f\n", whole, each, checksum,
                write);
    return 0;
}
