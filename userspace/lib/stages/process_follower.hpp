#pragma once
#include "events/stream_user_events.hpp"
#include "posixtrace.h"
#include "stages/process_probes.hpp"

namespace posixtrace {

// The stream follows its processes by their lifecycle records, delivered
// or not: a new image or new libraries get their probes attached (an
// inheriting stream's probes already fire in every process that maps an
// object, so a fork needs none), an exit forgets the process, and the
// numberings of user events follow images and the names they announce.
class ProcessFollower {
public:
    explicit ProcessFollower(StreamUserEvents &user_events) : user_events_(user_events) {}
    // `probes`: the stream's, or nullptr once it has none (shut down).
    void follow(const pt_record &record, ProcessProbes *probes);

private:
    StreamUserEvents &user_events_;
};

} // namespace posixtrace
