#pragma once
// A CTF 1.8 trace directory, for babeltrace2 and Trace Compass: `metadata`
// (TSDL text) and one binary stream file, `stream`.
#include <trace.h>

#include <map>
#include <string>

#include "byte_buffer.hpp"
#include "ctf_metadata.hpp"
#include "ctf_stream_file.hpp"
#include "event_writer.hpp"

namespace posixtrace::cli {

// Events go to the stream file as they come; the event classes are learnt
// from them and the metadata is written at the end, so the log is read once.
class CtfWriter : public EventWriter {
public:
    // Creates `directory` (or reuses one that is empty or holds an earlier
    // export); throws std::runtime_error if it cannot.
    CtfWriter(const std::string &directory, LogDescription description);
    void write(const LoggedEvent &event) override;
    void finish() override;
    std::string caveat() const override;

private:
    const CtfEventClass &class_of(const LoggedEvent &event);

    std::string directory_;
    LogDescription description_;
    CtfStreamFile stream_;
    std::map<trace_event_id_t, CtfEventClass> classes_;
};

} // namespace posixtrace::cli
