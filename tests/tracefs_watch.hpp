// The kernel's own account of a tracepoint, beside what posixtrace recorded:
// a tracefs instance of its own (no BPF) records one event, filtered in the
// kernel, so that a test tells "the kernel never fired it" from "posixtrace
// lost it".
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace test_support {

class TracefsWatch {
public:
    // `event` as "system/name"; `filter` in tracefs's filter language.
    TracefsWatch(const std::string &event, const std::string &filter)
        : path_("/sys/kernel/tracing/instances/posixtrace-test-" + std::to_string(getpid())),
          event_(event)
    {
        std::error_code error;
        std::filesystem::remove(path_, error); // one left by a test that was killed
        REQUIRE(std::filesystem::create_directory(path_));
        write("buffer_size_kb", "1024");
        write("events/" + event + "/filter", filter);
        write("events/" + event + "/enable", "1");
    }
    ~TracefsWatch()
    {
        std::ofstream(path_ + "/events/" + event_ + "/enable") << "0";
        std::error_code ignored;
        std::filesystem::remove(path_, ignored); // rmdir: tracefs frees the instance
    }
    TracefsWatch(const TracefsWatch &) = delete;
    TracefsWatch &operator=(const TracefsWatch &) = delete;

    // The value of `field` ("pid=") in each event recorded so far, with the
    // thread the event interrupted or ran in (the "comm-tid" tracefs names).
    std::map<long, pid_t> values_of(const std::string &field) const
    {
        std::ifstream trace(path_ + "/trace");
        std::map<long, pid_t> values;
        std::string line;
        while (std::getline(trace, line)) {
            size_t at = line.find(" " + field), cpu = line.find(" [");
            if (line.empty() || line[0] == '#' || at == std::string::npos ||
                cpu == std::string::npos)
                continue;
            size_t dash = line.rfind('-', cpu);
            pid_t context = dash == std::string::npos ? 0 : pid_t(std::stol(line.substr(dash + 1)));
            values[std::stol(line.substr(at + 1 + field.size()))] = context;
        }
        return values;
    }

    // Events the instance's buffer could not keep (then the account is partial).
    bool overrun() const
    {
        for (const auto &cpu : std::filesystem::directory_iterator(path_ + "/per_cpu")) {
            std::ifstream stats(cpu.path() / "stats");
            std::string text((std::istreambuf_iterator<char>(stats)), {});
            if (text.find("overrun: 0\n") == std::string::npos)
                return true;
        }
        return false;
    }

private:
    void write(const std::string &file, const std::string &text)
    {
        std::ofstream out(path_ + "/" + file);
        out << text;
        out.flush();
        REQUIRE(out.good());
    }

    std::string path_, event_;
};

} // namespace test_support
