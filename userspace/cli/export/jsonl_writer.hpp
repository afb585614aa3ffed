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
        : out_(std::move(path)), rows_(description, EventRows::Format::JsonObject)
    {
    }
    void write(const LoggedEvent &event) override
    {
        line_.clear();
        rows_.append_json_row(event, line_);
        out_.write(line_);
    }
    void finish() override { out_.close(); }
    std::string caveat() const override
    {
        return rows_.has_origin() ? "" : "no host or stream id (the log's writer kept none)";
    }

private:
    OutputFile out_;
    EventRows rows_;
    std::string line_;
};

} // namespace posixtrace::cli
