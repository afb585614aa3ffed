#include "ctf_writer.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "output_file.hpp"

namespace posixtrace::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char *kMetadataFile = "metadata";
constexpr const char *kStreamFile = "stream";

// The directory, made ready for a new trace. Files other than those of an
// earlier export are not ours to overwrite (nor to mix into this trace:
// readers take every file of the directory as a stream).
std::string prepared_directory(const std::string &directory)
{
    std::error_code error;
    fs::create_directories(directory, error);
    if (error)
        throw std::runtime_error(directory + ": " + error.message());
    if (!fs::is_directory(directory))
        throw std::runtime_error(directory + ": not a directory");
    for (const auto &entry : fs::directory_iterator(directory, error)) {
        std::string name = entry.path().filename();
        if (name != kMetadataFile && name != kStreamFile)
            throw std::runtime_error(directory + ": not empty (holds " + name +
                                     "): give a new or empty directory");
    }
    if (error)
        throw std::runtime_error(directory + ": " + error.message());
    fs::remove(fs::path(directory) / kMetadataFile, error); // no stale metadata if we fail
    return directory;
}

} // namespace

CtfWriter::CtfWriter(const std::string &directory, LogDescription description)
    : directory_(prepared_directory(directory)), description_(std::move(description)),
      stream_((fs::path(directory_) / kStreamFile).string())
{
}

const CtfEventClass &CtfWriter::class_of(const LoggedEvent &event)
{
    trace_event_id_t id = event.info.posix_event_id;
    auto found = classes_.find(id);
    if (found == classes_.end())
        found = classes_.emplace(id, CtfEventClass{event.name, ctf_payload_layout(id)}).first;
    return found->second;
}

void CtfWriter::write(const LoggedEvent &event)
{
    const CtfEventClass &event_class = class_of(event);
    ByteBuffer body; // the event context, then the payload
    body.put<int32_t>(event.info.posix_pid);
    body.put<int32_t>(event.info.posix_tid);
    encode_ctf_payload(event_class.layout, event.data, event.length, body);
    stream_.add(event.info.posix_event_id, timestamp_ns(event.info), std::move(body));
}

std::string CtfWriter::caveat() const
{
    uint64_t restamped = stream_.restamped();
    if (!restamped)
        return "";
    return std::to_string(restamped) +
           " events far out of timestamp order were stamped with the time of the event before "
           "them (CTF wants ordered timestamps)";
}

void CtfWriter::finish()
{
    stream_.close();
    OutputFile metadata((fs::path(directory_) / kMetadataFile).string());
    metadata.write(ctf_metadata(description_, classes_));
    metadata.close();
}

} // namespace posixtrace::cli
