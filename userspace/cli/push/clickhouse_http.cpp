#include "clickhouse_http.hpp"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>

#include "../safe_text.hpp"

namespace posixtrace::cli {
namespace {

constexpr long kConnectTimeoutSeconds = 5;
constexpr long kRequestTimeoutSeconds = 120;

size_t keep_answer(char *data, size_t size, size_t count, void *into)
{
    auto &answer = *static_cast<std::string *>(into);
    size_t bytes = size * count;
    size_t room = ClickHouseHttp::kMostAnswerBytes -
                  std::min(answer.size(), ClickHouseHttp::kMostAnswerBytes);
    answer.append(data, std::min(bytes, room));
    return bytes;
}

// A server's error text, for a terminal: on one line, not much of it,
// escaped (ClickHouse quotes the row it could not parse, and the row holds
// what a traced process wrote).
std::string first_line(const std::string &text)
{
    std::string line = terminal_column(text.substr(0, text.find('\n')), 300);
    return line.substr(0, line.find_last_not_of(' ') + 1);
}

bool has_http_scheme(const std::string &url)
{
    return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

// The URL without the user and password it may hold: what messages show.
std::string without_credentials(const std::string &url)
{
    size_t host = url.find("//") + 2;
    size_t at = url.find('@', host), path = url.find('/', host);
    if (at == std::string::npos || (path != std::string::npos && at > path))
        return url;
    return url.substr(0, host) + url.substr(at + 1);
}

} // namespace

struct ClickHouseHttp::Handle {
    struct Cleanup {
        void operator()(CURL *curl) const { curl_easy_cleanup(curl); }
    };
    std::unique_ptr<CURL, Cleanup> curl;
};

ClickHouseHttp::ClickHouseHttp(std::string base_url)
    : base_url_(std::move(base_url)), handle_(std::make_unique<Handle>())
{
    if (!has_http_scheme(base_url_) || base_url_.find_first_of(" \t\r\n?#") != std::string::npos)
        throw std::invalid_argument("not an http:// or https:// URL without a query: '" +
                                    terminal_text(without_credentials(base_url_)) + "'");
    while (base_url_.size() > 8 && base_url_.back() == '/')
        base_url_.pop_back();
    shown_url_ = without_credentials(base_url_);
    static std::once_flag initialized;
    std::call_once(initialized, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    handle_->curl.reset(curl_easy_init());
    if (!handle_->curl)
        throw std::runtime_error("libcurl could not start");
}

ClickHouseHttp::~ClickHouseHttp() = default;

std::string ClickHouseHttp::post(const std::string &query, const std::string &data)
{
    CURL *curl = handle_->curl.get();
    std::unique_ptr<char, decltype(&curl_free)> escaped(
        curl_easy_escape(curl, query.c_str(), int(query.size())), curl_free);
    if (!escaped)
        throw HttpFailure("cannot encode the query", false);
    std::string url = base_url_ + "/?query=" + escaped.get();
    std::string answer;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, data.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(data.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_answer);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutSeconds);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, kRequestTimeoutSeconds);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    // The server's redirects are not followed: rows go where the user said.
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    // A password kept out of the command line, which every user can read.
    if (const char *password = std::getenv("POSIXTRACE_CLICKHOUSE_PASSWORD"))
        curl_easy_setopt(curl, CURLOPT_PASSWORD, password);
    CURLcode sent = curl_easy_perform(curl);
    if (sent != CURLE_OK)
        throw HttpFailure(curl_easy_strerror(sent), true);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200)
        throw HttpFailure("HTTP " + std::to_string(status) + ": " + first_line(answer),
                          status >= 500 || status == 408 || status == 429);
    return answer;
}

} // namespace posixtrace::cli
