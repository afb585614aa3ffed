// What the tests of kernel-side reuse look at: the BPF programs and links
// this process holds descriptors of, as /proc shows them.
#pragma once
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "test_support.hpp"

namespace reuse_support {

using test_support::Clock;

// Calls `visit` with the number of each descriptor this process holds of
// the anonymous inode `kind` ("anon_inode:bpf-prog"...).
template <class Visit> void for_each_descriptor_of(const std::string &kind, Visit visit)
{
    DIR *descriptors = opendir("/proc/self/fd");
    REQUIRE(descriptors != nullptr);
    while (dirent *entry = readdir(descriptors)) {
        std::string path = std::string("/proc/self/fd/") + entry->d_name;
        char target[64] = {};
        if (readlink(path.c_str(), target, sizeof target - 1) > 0 && std::string(target) == kind)
            visit(entry->d_name);
    }
    closedir(descriptors);
}

// The ids of the BPF programs this process holds a descriptor of.
inline std::set<unsigned> bpf_programs_held()
{
    std::set<unsigned> ids;
    for_each_descriptor_of("anon_inode:bpf-prog", [&](const char *fd) {
        std::ifstream info(std::string("/proc/self/fdinfo/") + fd);
        for (std::string line; std::getline(info, line);)
            if (line.rfind("prog_id:", 0) == 0)
                ids.insert(unsigned(std::stoul(line.substr(8))));
    });
    return ids;
}

// How many BPF links (attached programs) this process holds a descriptor of.
inline size_t bpf_links_held()
{
    size_t links = 0;
    for_each_descriptor_of("anon_inode:bpf_link", [&](const char *) { ++links; });
    return links;
}

inline bool disjoint(const std::set<unsigned> &a, const std::set<unsigned> &b)
{
    for (unsigned id : a)
        if (b.count(id))
            return false;
    return true;
}

// The programs of a stream ended just now, once this process no longer
// holds any of them (the parked ones go after KernelParking's idle life).
inline bool released_within(const std::set<unsigned> &programs, std::chrono::seconds limit)
{
    auto deadline = Clock::now() + limit;
    while (!disjoint(programs, bpf_programs_held())) {
        if (Clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

// Starts a test with no program held: the parked ones of earlier tests gone.
inline void start_with_no_program_held()
{
    REQUIRE(released_within(bpf_programs_held(), std::chrono::seconds(20)));
}

// Whether every BPF link this process held is gone within `limit`: probes
// retired are detached once the process set no stream up for a while.
inline bool links_released_within(std::chrono::seconds limit)
{
    auto deadline = Clock::now() + limit;
    while (bpf_links_held() != 0) {
        if (Clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

// The programs in `now` that are not in `before`.
inline std::set<unsigned> new_programs(const std::set<unsigned> &before,
                                       const std::set<unsigned> &now)
{
    std::set<unsigned> added;
    for (unsigned id : now)
        if (!before.count(id))
            added.insert(id);
    return added;
}

} // namespace reuse_support
