#include "output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace posixtrace::cli {
namespace {

constexpr size_t kOutputBufferBytes = 1 << 20;

} // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path))
{
    if (path_ == "-") { // a descriptor of its own: closing it leaves stdout open
        path_ = "standard output";
        int out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
        file_.reset(out >= 0 ? fdopen(out, "w") : nullptr);
        if (!file_ && out >= 0)
            ::close(out);
    } else {
        file_.reset(std::fopen(path_.c_str(), "we"));
    }
    if (!file_)
        fail_with_errno();
    std::setvbuf(file_.get(), nullptr, _IOFBF, kOutputBufferBytes);
}

void OutputFile::write(const void *data, size_t length)
{
    if (!file_)
        throw std::logic_error(path_ + ": written after close");
    if (length && std::fwrite(data, 1, length, file_.get()) != length)
        fail_with_errno();
}

void OutputFile::close()
{
    if (!file_)
        return;
    std::FILE *file = file_.release();
    bool failed = std::fflush(file) != 0 || std::ferror(file);
    int err = errno;
    if (std::fclose(file) != 0 && !failed) {
        failed = true;
        err = errno;
    }
    if (failed) {
        errno = err;
        fail_with_errno();
    }
}

void OutputFile::fail_with_errno() const
{
    throw std::runtime_error(path_ + ": " + std::strerror(errno ? errno : EIO));
}

} // namespace posixtrace::cli
