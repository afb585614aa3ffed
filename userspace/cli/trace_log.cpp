#include "trace_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "target.hpp"

namespace posixtrace::cli {
namespace {

// Every event of a log fits (docs/log-format.md: at most 8192 bytes of
// data); a log whose attributes allow more gets more.
constexpr size_t kMinimumDataRoom = 8192;

struct stat status_of(int fd, const std::string &path)
{
    struct stat status;
    if (fstat(fd, &status) != 0)
        fail(path + ": " + std::strerror(errno));
    return status;
}

UniqueFd open_readable_file(const std::string &path)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        fail(path + ": " + std::strerror(errno));
    if (S_ISDIR(status_of(fd.get(), path).st_mode))
        fail(path + ": " + std::strerror(EISDIR));
    return fd;
}

trace_id_t open_log(int fd, const std::string &path)
{
    trace_id_t trid;
    int err = posix_trace_open(fd, &trid);
    if (err == EINVAL)
        fail(path + ": not a trace log (or its header is damaged)");
    if (err)
        fail(path + ": cannot read the trace log: " + std::strerror(err));
    return trid;
}

std::string fixed_string(const char *text, size_t room)
{
    return std::string(text, strnlen(text, room));
}

} // namespace

TraceLog::TraceLog(const std::string &path) : TraceLog(path, open_readable_file(path)) {}

TraceLog::TraceLog(const std::string &path, UniqueFd fd)
    : path_(path), fd_(std::move(fd)), file_size_(uint64_t(status_of(fd_.get(), path).st_size)),
      trid_(open_log(fd_.get(), path)), names_(trid_)
{
    trace_attr_t attr;
    size_t max_data = 0;
    if (posix_trace_get_attr(trid_, &attr) == 0)
        posix_trace_attr_getmaxdatasize(&attr, &max_data);
    data_.resize(std::max(max_data, kMinimumDataRoom));
}

LogDescription TraceLog::description() const
{
    LogDescription description;
    trace_attr_t attr;
    if (posix_trace_get_attr(trid_, &attr) != 0)
        return description;
    char name[TRACE_NAME_MAX] = {};
    if (posix_trace_attr_getname(&attr, name) == 0)
        description.trace_name = fixed_string(name, sizeof name);
    char version[TRACE_NAME_MAX] = {};
    if (posix_trace_attr_getgenversion(&attr, version) == 0)
        description.generation_version = fixed_string(version, sizeof version);
    posix_trace_attr_getcreatetime(&attr, &description.creation_time);
    posix_trace_origin origin;
    if (posix_trace_get_origin(trid_, &origin) == 0)
        description.origin = origin;
    timespec resolution{};
    if (posix_trace_attr_getclockres(&attr, &resolution) == 0 && resolution.tv_sec == 0 &&
        resolution.tv_nsec > 0)
        description.clock_resolution_ns = resolution.tv_nsec;
    return description;
}

posix_trace_status_info TraceLog::status() const
{
    posix_trace_status_info status{};
    posix_trace_get_status(trid_, &status);
    return status;
}

int TraceLog::read_all(ReadTally &tally, const std::function<void(const LoggedEvent &)> &visit)
{
    ReadProgress progress(path_, file_size_);
    return read_all([&](const LoggedEvent &event) {
        progress.advance(event.length);
        tally.count(event);
        visit(event);
    });
}

int TraceLog::read_all(const std::function<void(const LoggedEvent &)> &visit)
{
    for (;;) {
        posix_trace_event_info info;
        size_t length = 0;
        int unavailable = 0;
        int err = posix_trace_getnext_event(trid_, &info, data_.data(), data_.size(), &length,
                                            &unavailable);
        if (err)
            return err;
        if (unavailable) // a log has no more to come: its end
            return 0;
        posix_trace_namespace_ids ids;
        bool has_ids = posix_trace_event_namespace_ids(trid_, &ids) == 0;
        visit(LoggedEvent{info, names_.of(info.posix_event_id), data_.data(), length,
                          has_ids ? &ids : nullptr});
    }
}

std::string read_error_message(const std::string &path, int err, uint64_t events)
{
    std::string where = "after " + std::to_string(events) + " events";
    if (err == EINVAL)
        return path + ": the log is damaged " + where + "; reading stopped there";
    return path + ": reading failed " + where + ": " + std::strerror(err);
}

} // namespace posixtrace::cli
