// The stress harness (tests/stress/, `make stress` for minutes) run briefly:
// every scenario, every oracle, one second of emission each.
#include "cli_support.hpp"

#include <catch2/catch.hpp>

using namespace cli_support;

namespace {

std::string stress_path()
{
    char self[4096] = {};
    REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
    std::string path(self);
    return path.substr(0, path.rfind('/')) + "/stress/posixtrace-stress";
}

} // namespace

TEST_CASE("stress: order, sequences, switches and loss accounting hold in every scenario",
          "[stress][self-tracing]")
{
    Run list = run_shell(stress_path() + " --list");
    REQUIRE(list.status == 0);
    size_t scenarios = list.lines().size();
    CHECK(scenarios >= 8);

    Run run = run_shell(stress_path() + " --seconds 1");
    INFO(run.out << run.err);
    CHECK(run.status == 0);
    auto lines = run.lines();
    size_t passed = 0;
    for (const auto &line : lines)
        passed += line.rfind("stress ", 0) == 0 && line.size() > 4 &&
                  line.substr(line.size() - 4) == ": ok";
    CHECK(passed == scenarios);
    CHECK(run.out.find("runs, 0 failed") != std::string::npos);
}

TEST_CASE("stress: bad arguments give a usage line and status 2", "[stress][self-tracing]")
{
    Run run = run_shell(stress_path() + " --seconds 0");
    CHECK(run.status == 2);
    CHECK(run.err.find("usage: posixtrace-stress") != std::string::npos);
    Run unknown = run_shell(stress_path() + " --scenario nosuch");
    CHECK(unknown.status == 2);
    CHECK(unknown.err.find("unknown scenario") != std::string::npos);
}
