#include "ctf_stream_file.hpp"

#include <algorithm>

#include "ctf_metadata.hpp"

namespace posixtrace::cli {
namespace {

constexpr size_t kPacketBytes = 64 << 10;
constexpr size_t kReorderWindowEvents = 16384;

} // namespace

CtfStreamFile::CtfStreamFile(std::string path) : file_(std::move(path)) {}

void CtfStreamFile::add(uint32_t id, uint64_t timestamp_ns, ByteBuffer &&body)
{
    window_.push(Pending{timestamp_ns, sequence_++, id, std::move(body)});
    if (window_.size() > kReorderWindowEvents) {
        emit(window_.top());
        window_.pop();
    }
}

void CtfStreamFile::emit(const Pending &event)
{
    uint64_t ns = event.timestamp_ns;
    if (written_any_ && ns < last_ns_) {
        ns = last_ns_;
        ++restamped_;
    }
    size_t event_bytes = kCtfEventHeaderBytes + event.body.size();
    size_t head_bytes = kCtfPacketHeaderBytes + kCtfPacketContextBytes;
    if (packet_events_.size() && head_bytes + packet_events_.size() + event_bytes > kPacketBytes)
        write_packet();
    if (!packet_events_.size())
        first_ns_ = ns;
    packet_events_.put<uint32_t>(event.id);
    packet_events_.put<uint64_t>(ns);
    packet_events_.put_bytes(event.body.data(), event.body.size());
    last_ns_ = ns;
    written_any_ = true;
}

void CtfStreamFile::write_packet()
{
    ByteBuffer head;
    uint64_t bits = 8 * (kCtfPacketHeaderBytes + kCtfPacketContextBytes + packet_events_.size());
    head.put<uint32_t>(kCtfMagic);
    head.put<uint32_t>(0); // stream_id
    head.put<uint64_t>(first_ns_);
    head.put<uint64_t>(last_ns_);
    head.put<uint64_t>(bits); // content_size
    head.put<uint64_t>(bits); // packet_size: no padding
    file_.write(head.data(), head.size());
    file_.write(packet_events_.data(), packet_events_.size());
    packet_events_.clear();
}

void CtfStreamFile::close()
{
    for (; !window_.empty(); window_.pop())
        emit(window_.top());
    if (packet_events_.size())
        write_packet();
    file_.close();
}

} // namespace posixtrace::cli
