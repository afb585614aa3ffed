#include "util/text_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/unique_fd.hpp"

namespace posixtrace {
namespace {

UniqueFd open_for_reading(const std::string &path)
{
    return UniqueFd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
}

// read(), again when a signal interrupted it: the bytes read, 0 at the end,
// -1 on an error.
ssize_t read_some(int fd, char *into, size_t bytes)
{
    ssize_t got;
    do
        got = read(fd, into, bytes);
    while (got < 0 && errno == EINTR);
    return got;
}

// The line being put together from chunks; one past the limit is dropped.
class PendingLine {
public:
    void append(std::string_view piece)
    {
        if (too_long_ || text_.size() + piece.size() > kLongestTextLineBytes) {
            too_long_ = true;
            text_.clear();
            return;
        }
        text_.append(piece);
    }
    // What on_line says: go on reading.
    bool pass_on(const LineVisitor &on_line)
    {
        bool go_on = too_long_ || on_line(text_);
        text_.clear();
        too_long_ = false;
        return go_on;
    }
    bool empty() const { return text_.empty() && !too_long_; }

private:
    std::string text_;
    bool too_long_ = false;
};

} // namespace

std::optional<std::string> read_text_file(const std::string &path, size_t limit)
{
    UniqueFd fd = open_for_reading(path);
    if (!fd)
        return std::nullopt;
    // Grown as read: most files are far shorter than their limit.
    std::string text;
    char chunk[16384];
    while (text.size() < limit) {
        ssize_t got = read_some(fd.get(), chunk, std::min(sizeof chunk, limit - text.size()));
        if (got < 0)
            return std::nullopt;
        if (got == 0)
            break;
        text.append(chunk, size_t(got));
    }
    return text;
}

std::string read_first_line(const std::string &path)
{
    std::string text = read_text_file(path).value_or("");
    return text.substr(0, text.find('\n'));
}

bool for_each_line(const std::string &path, const LineVisitor &on_line)
{
    UniqueFd fd = open_for_reading(path);
    if (!fd)
        return false;
    PendingLine line;
    char chunk[16384];
    for (;;) {
        ssize_t got = read_some(fd.get(), chunk, sizeof chunk);
        if (got < 0)
            return false;
        if (got == 0)
            break;
        std::string_view rest(chunk, size_t(got));
        for (size_t newline; (newline = rest.find('\n')) != std::string_view::npos;
             rest.remove_prefix(newline + 1)) {
            line.append(rest.substr(0, newline));
            if (!line.pass_on(on_line))
                return true;
        }
        line.append(rest);
    }
    if (!line.empty())
        line.pass_on(on_line);
    return true;
}

} // namespace posixtrace
