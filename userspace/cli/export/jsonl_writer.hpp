#pragma once
// JSON Lines: one object a line, one line an event (EventRows), for any
// engine that ingests JSON (ClickHouse's JSONEachRow, Elasticsearch, jq,
// pandas).
#include <string>

#include "event_rows.hpp"
#include "event_writer.hpp"
#include "output_file.hpp"

namespace posixtrace::cli {

class JsonlWriter : public EventWriter {
public:
    JsonlWriter(std::string path, const LogDescription &description)
        : out_(std::move(path)), rows_(description, EventRows::Fields::Object)
    {
    }
    void write(const LoggedEvent &event) override { out_.write(rows_.row(event) + "\n"); }
    void finish() override { out_.close(); }
    std::string caveat() const override
    {
        return rows_.has_origin() ? "" : "no host or stream id (the log's writer kept none)";
    }

private:
    OutputFile out_;
    EventRows rows_;
};

} // namespace posixtrace::cli
