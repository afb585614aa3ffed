#include "event_block.hpp"

#include <cstring>

#include "../event_format.hpp"
#include "../safe_text.hpp"

namespace posixtrace::cli {
namespace {

// The events table's columns that push fills, in the order of the block.
struct ColumnOf {
    const char *name, *type;
};
enum Column : size_t {
    kHostName,
    kBootId,
    kStreamId,
    kStreamName,
    kSequence,
    kTimeUnixNano,
    kTimeMonotonic,
    kPid,
    kTid,
    kThreadName,
    kEventName,
    kEventClass,
    kEventId,
    kPayload,
    kTruncated,
    kLostBefore,
    kFields,
    kVpid,
    kVtid,
    kColumns
};
constexpr ColumnOf kColumnsOf[kColumns] = {
    {"host.name", "String"},        {"host.boot_id", "UUID"}, {"stream.id", "UUID"},
    {"stream.name", "String"},      {"sequence", "UInt64"},   {"time_unix_nano", "UInt64"},
    {"time_monotonic_ns", "Int64"}, {"process.pid", "Int32"}, {"thread.id", "Int32"},
    {"thread.name", "String"},      {"event.name", "String"}, {"event.class", "String"},
    {"event.id", "UInt32"},         {"data", "String"},       {"truncated", "String"},
    {"lost_before", "UInt64"},      {"fields", "String"},     {"process.vpid", "Int32"},
    {"thread.vtid", "Int32"}};

const char *column_name(size_t column, EventBlock::Payload payload)
{
    return column == kPayload && payload == EventBlock::Payload::Hex ? "data_hex"
                                                                     : kColumnsOf[column].name;
}

} // namespace

EventBlock::EventBlock(const LogDescription &description, Payload payload)
    : payload_(payload), host_(valid_utf8(description.origin->host_name)),
      stream_name_(valid_utf8(description.trace_name))
{
    std::memcpy(boot_id_, description.origin->boot_id, sizeof boot_id_);
    std::memcpy(stream_id_, description.origin->stream_id, sizeof stream_id_);
    for (size_t column = 0; column < kColumns; ++column)
        block_.add_column(column_name(column, payload), kColumnsOf[column].type);
}

std::string EventBlock::insert_query(Payload payload)
{
    std::string query = "INSERT INTO posixtrace.events (";
    for (size_t column = 0; column < kColumns; ++column)
        query += std::string(column ? ", `" : "`") + column_name(column, payload) + "`";
    return query + ") FORMAT Native";
}

void EventBlock::append(const EventRow &row)
{
    block_.append_string(kHostName, host_);
    block_.append_uuid(kBootId, boot_id_);
    block_.append_uuid(kStreamId, stream_id_);
    block_.append_string(kStreamName, stream_name_);
    block_.append_number(kSequence, uint64_t(row.sequence));
    block_.append_number(kTimeUnixNano, uint64_t(row.time_unix_nano));
    block_.append_number(kTimeMonotonic, int64_t(row.time_monotonic_ns));
    block_.append_number(kPid, int32_t(row.pid));
    block_.append_number(kTid, int32_t(row.tid));
    block_.append_string(kThreadName, row.thread_name);
    block_.append_string(kEventName, row.event_name);
    block_.append_string(kEventClass, row.event_class);
    block_.append_number(kEventId, uint32_t(row.event_id));
    if (payload_ == Payload::Bytes) {
        block_.append_string(kPayload, row.data);
    } else {
        hex_ = hex_text(reinterpret_cast<const unsigned char *>(row.data.data()), row.data.size());
        block_.append_string(kPayload, hex_);
    }
    block_.append_string(kTruncated, row.truncated);
    block_.append_number(kLostBefore, uint64_t(row.lost_before));
    block_.append_string(kFields, row.fields.empty() ? "{}" : "{" + row.fields + "}");
    block_.append_number(kVpid, int32_t(row.vpid));
    block_.append_number(kVtid, int32_t(row.vtid));
    block_.end_row();
}

} // namespace posixtrace::cli
