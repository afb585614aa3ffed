// libFuzzer target for the reader of another process's user event name table
// (read_user_event_names, events/remote_user_events.cpp): the table is
// memory of the traced process, so every byte of it is the process's to set
// (docs/security.md). The input is that memory, from the table's address on;
// reading past its end fails as process_vm_readv would on an unmapped page.
// `make fuzz` builds it; scripts/fuzz.sh runs it.
#include "fuzz_check.hpp"
#include <trace.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "events/remote_user_events.hpp"
#include "events/user_event_table.hpp"

namespace {

constexpr uint64_t kTableAddress = 0x7f0000001000;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    // The first 2 bytes choose how many names the reader knows already (a
    // second read of a table that grew); the rest is the table.
    size_t known = 0;
    if (size >= 2) {
        known = (size_t(data[0]) << 8 | data[1]) % (TRACE_USER_EVENT_MAX + 2);
        data += 2;
        size -= 2;
    }
    // The table header is checked before anything: a magic and a version of
    // ours make the mutations reach the names more often.
    std::vector<uint8_t> memory(data, data + size);
    if (memory.size() >= 8 && memory[0] == 'P') {
        uint32_t header[2] = {posixtrace::kUserEventTableMagic, posixtrace::kUserEventTableVersion};
        std::memcpy(memory.data(), header, sizeof header);
    }
    size_t reads = 0;
    posixtrace::MemoryReader read = [&](uint64_t address, void *into, size_t length) {
        ++reads;
        if (address < kTableAddress || address - kTableAddress > memory.size() ||
            length > memory.size() - (address - kTableAddress))
            return false;
        std::memcpy(into, memory.data() + (address - kTableAddress), length);
        return true;
    };
    std::vector<std::string> names(known, "known");
    posixtrace::read_user_event_names(read, kTableAddress, names);
    FUZZ_CHECK(names.size() <= std::max<size_t>(known, TRACE_USER_EVENT_MAX));
    FUZZ_CHECK(reads <= TRACE_USER_EVENT_MAX + 1);
    for (size_t i = known; i < names.size(); ++i)
        FUZZ_CHECK(names[i].size() < TRACE_EVENT_NAME_MAX);
    return 0;
}
