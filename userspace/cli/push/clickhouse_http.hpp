#pragma once
// ClickHouse's HTTP interface, through libcurl: one connection kept open
// for every request of a push (http:// or https://; a user in the URL as
// curl takes it, and its password there or, better, in the environment:
// POSIXTRACE_CLICKHOUSE_PASSWORD).
#include <memory>
#include <stdexcept>
#include <string>

namespace posixtrace::cli {

// A request that did not succeed, in one line. `retryable`: the server may
// take the same request later (it could not be reached, timed out, or
// answered 5xx); a 4xx answer is the request's fault and stays one.
class HttpFailure : public std::runtime_error {
public:
    HttpFailure(const std::string &what, bool retryable)
        : std::runtime_error(what), retryable_(retryable)
    {
    }
    bool retryable() const { return retryable_; }

private:
    bool retryable_;
};

class ClickHouseHttp {
public:
    // `base_url`: http(s)://host:port, optionally with a path; anything
    // else is refused (std::invalid_argument) before a connection is tried.
    explicit ClickHouseHttp(std::string base_url);
    ~ClickHouseHttp();
    ClickHouseHttp(const ClickHouseHttp &) = delete;
    ClickHouseHttp &operator=(const ClickHouseHttp &) = delete;

    // Runs `query`, with `data` after it (the rows of an INSERT ... FORMAT);
    // returns the answer's body (at most kMostAnswerBytes of it). Throws
    // HttpFailure.
    std::string post(const std::string &query, const std::string &data = "");
    // The URL as messages show it: without user and password.
    const std::string &url() const { return shown_url_; }

    // A server's answer is read up to this, the rest dropped: a query's
    // result here is a few numbers, an error one message.
    static constexpr size_t kMostAnswerBytes = 64 * 1024;

private:
    struct Handle;
    std::string base_url_;
    std::string shown_url_;
    std::unique_ptr<Handle> handle_;
};

} // namespace posixtrace::cli
