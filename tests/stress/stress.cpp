// posixtrace-stress: runs workloads that make ordering and loss accounting
// hard (more threads than CPUs, CPU hogs, signal handlers and timer
// wake-ups interrupting programs, forks, thread churn, user + USDT + thread
// + lifecycle events), under each stream configuration, and checks every
// event against the oracles of checker.hpp.
//
//   posixtrace-stress [--seconds S] [--total T] [--scenario NAME,...] [--list]
//
// Each scenario emits for S seconds (default 2); with --total the scenarios
// run in turn until T seconds have passed. Exit status 1 if any check failed.
#include <posix_trace/usdt.h>
#include <trace.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "scenarios.hpp"

namespace {

void usage()
{
    std::fprintf(stderr, "usage: posixtrace-stress [--seconds S] [--total T] [--scenario NAME,...] "
                         "[--list]\n");
    std::exit(2);
}

std::vector<std::string> split(const std::string &list)
{
    std::vector<std::string> names;
    size_t start = 0;
    for (size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
        names.push_back(list.substr(start, comma - start));
    names.push_back(list.substr(start));
    return names;
}

} // namespace

int main(int argc, char **argv)
{
    double seconds = 2, total = 0;
    std::vector<std::string> chosen;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                usage();
            return argv[++i];
        };
        if (arg == "--seconds")
            seconds = std::atof(value().c_str());
        else if (arg == "--total")
            total = std::atof(value().c_str());
        else if (arg == "--scenario")
            chosen = split(value());
        else if (arg == "--list") {
            for (const auto &scenario : stress::scenarios())
                std::printf("%-11s %s\n", scenario.name, scenario.what);
            return 0;
        } else
            usage();
    }
    if (seconds <= 0)
        usage();
    std::vector<const stress::Scenario *> plan;
    for (const auto &scenario : stress::scenarios())
        if (chosen.empty() ||
            std::find(chosen.begin(), chosen.end(), std::string(scenario.name)) != chosen.end())
            plan.push_back(&scenario);
    if (plan.empty() || (!chosen.empty() && plan.size() != chosen.size())) {
        std::fprintf(stderr, "posixtrace-stress: unknown scenario (see --list)\n");
        return 2;
    }

    auto begin = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    int runs = 0, failed = 0;
    do {
        for (const stress::Scenario *scenario : plan) {
            failed += !stress::run(*scenario, seconds);
            ++runs;
            if (total > 0 && elapsed() >= total)
                break;
        }
    } while (total > 0 && elapsed() < total);
    std::printf("posixtrace-stress: %d runs, %d failed, %.0f s\n", runs, failed, elapsed());
    return failed ? 1 : 0;
}
