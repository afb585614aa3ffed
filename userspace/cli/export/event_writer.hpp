#pragma once
#include <string>

#include "../logged_event.hpp"

namespace posixtrace::cli {

// An export format: takes the events of a log in order, then finishes the
// output. Failures to write throw std::runtime_error("PATH: reason").
class EventWriter {
public:
    virtual ~EventWriter() = default;
    virtual void write(const LoggedEvent &event) = 0;
    // Completes the output (valid however many events were written, even 0).
    virtual void finish() = 0;
    // After finish: what the output could not keep exactly as the log had
    // it, in a few words for the summary line; empty if nothing.
    virtual std::string caveat() const { return {}; }
};

} // namespace posixtrace::cli
