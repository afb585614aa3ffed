#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace posixtrace::cli {

// A file being written, buffered. Every failure (cannot create, disk full)
// throws std::runtime_error("PATH: reason"): an export never ends with a
// silently short file. The path "-" is standard output.
class OutputFile {
public:
    explicit OutputFile(std::string path);
    void write(const void *data, size_t length);
    void write(std::string_view text) { write(text.data(), text.size()); }
    void close(); // flushes; throws if anything could not be written
    const std::string &path() const { return path_; }

private:
    [[noreturn]] void fail_with_errno() const;

    struct Closer {
        void operator()(std::FILE *file) const { std::fclose(file); }
    };
    std::string path_;
    std::unique_ptr<std::FILE, Closer> file_;
};

} // namespace posixtrace::cli
