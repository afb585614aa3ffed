// A ClickHouse server of a test's own: Debian's clickhouse-server, started
// with a configuration and data directory in a temporary directory, on
// free loopback ports, and stopped by its pid when the test ends. No system
// service is used or touched.
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "cli_support.hpp"
#include "test_support.hpp"

namespace clickhouse_support {

using cli_support::Run;
using cli_support::run_shell;

// The events table as the first release made it: the payload as text, and
// none of the columns added since (push adds them).
inline const char *const kFirstReleaseEventsTable = R"(CREATE DATABASE posixtrace;
CREATE TABLE posixtrace.events
(
    `host.name` String, `host.boot_id` UUID, `stream.id` UUID, `stream.name` String,
    sequence UInt64, time_unix_nano UInt64, time_monotonic_ns Int64, `process.pid` Int32,
    `thread.id` Int32, `thread.name` String, `event.name` String, `event.class` String,
    `event.id` UInt32, data_hex String, truncated String, lost_before UInt64, fields String,
    time DateTime MATERIALIZED toDateTime(intDiv(time_unix_nano, 1000000000))
)
ENGINE = ReplacingMergeTree
ORDER BY (`host.name`, `process.pid`, time_unix_nano, `stream.id`, sequence);
)";

// A loopback port nobody listens on now (the kernel's pick among the free).
inline int free_port()
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0);
    close(fd);
    return ntohs(address.sin_port);
}

class ClickHouseServer {
public:
    // `start_now` false: the ports and files are ready, start() starts it.
    explicit ClickHouseServer(bool start_now = true)
    {
        http_port_ = free_port();
        do
            tcp_port_ = free_port();
        while (tcp_port_ == http_port_);
        write_configuration();
        if (start_now)
            start();
    }
    ~ClickHouseServer() { stop(); }
    ClickHouseServer(const ClickHouseServer &) = delete;
    ClickHouseServer &operator=(const ClickHouseServer &) = delete;

    std::string url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }

    void start()
    {
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            int out = open((dir_ / "server.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(out, 1);
            dup2(out, 2);
            std::string config = "--config-file=" + (dir_ / "config.xml");
            execl("/usr/sbin/clickhouse-server", "clickhouse-server", config.c_str(), nullptr);
            _exit(127);
        }
        wait_until_it_answers();
    }

    // Stops the server; its data stays until the object goes.
    void stop()
    {
        if (pid_ <= 0)
            return;
        kill(pid_, SIGTERM);
        for (int i = 0; i < 300 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (kill(pid_, 0) == 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        pid_ = -1;
    }

    // The query's result, tab-separated, with clickhouse-client.
    Run query(const std::string &sql) const
    {
        std::string file = dir_ / ("query-" + std::to_string(queries_++) + ".sql");
        std::ofstream(file) << sql;
        return run_shell("clickhouse-client --host 127.0.0.1 --port " + std::to_string(tcp_port_) +
                         " --multiquery < " + file);
    }
    // `insert` (an INSERT ... FORMAT) with the rows of `file` after it.
    Run insert(const std::string &insert, const std::string &file) const
    {
        return run_shell("clickhouse-client --host 127.0.0.1 --port " + std::to_string(tcp_port_) +
                         " --query '" + insert + "' < " + file);
    }
    // The query's result, which must come.
    std::string answer(const std::string &sql) const
    {
        Run run = query(sql);
        INFO(sql << "\n" << run.err);
        REQUIRE(run.status == 0);
        return run.out;
    }

private:
    void write_configuration()
    {
        std::ofstream(dir_ / "config.xml")
            << "<?xml version=\"1.0\"?>\n<yandex>\n"
            << "  <logger><level>warning</level><log>" << (dir_ / "server.log")
            << "</log><errorlog>" << (dir_ / "error.log") << "</errorlog></logger>\n"
            << "  <listen_host>127.0.0.1</listen_host>\n"
            << "  <http_port>" << http_port_ << "</http_port>\n"
            << "  <tcp_port>" << tcp_port_ << "</tcp_port>\n"
            << "  <path>" << (dir_ / "data") << "/</path>\n"
            << "  <tmp_path>" << (dir_ / "tmp") << "/</tmp_path>\n"
            << "  <user_files_path>" << (dir_ / "user_files") << "/</user_files_path>\n"
            << "  <users_config>" << (dir_ / "users.xml") << "</users_config>\n"
            << "  <default_profile>default</default_profile>\n"
            << "  <default_database>default</default_database>\n"
            << "  <mark_cache_size>67108864</mark_cache_size>\n"
            << "</yandex>\n";
        std::ofstream(dir_ / "users.xml")
            << "<?xml version=\"1.0\"?>\n<yandex>\n"
            << "  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default>"
            << "</profiles>\n"
            << "  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
            << "<profile>default</profile><quota>default</quota></default></users>\n"
            << "  <quotas><default></default></quotas>\n</yandex>\n";
    }

    void wait_until_it_answers()
    {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (query("SELECT 1").status != 0) {
            int status;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                FAIL("clickhouse-server exited: " << file_text(dir_ / "server.out")
                                                  << file_text(dir_ / "error.log"));
            }
            if (std::chrono::steady_clock::now() > deadline)
                FAIL("clickhouse-server did not answer within 60 s: "
                     << file_text(dir_ / "error.log"));
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }

    static std::string file_text(const std::string &path)
    {
        std::ifstream file(path);
        return std::string(std::istreambuf_iterator<char>(file), {});
    }

    test_support::TempDir dir_;
    int http_port_ = 0, tcp_port_ = 0;
    pid_t pid_ = -1;
    mutable unsigned queries_ = 0;
};

} // namespace clickhouse_support
