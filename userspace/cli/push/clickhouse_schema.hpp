#pragma once
#include <string>
#include <vector>

namespace posixtrace::cli {

// The statements of the installed schema (share/clickhouse.sql, built in),
// each without its comments: what push runs before it sends rows, so a
// server that has never seen posixtrace takes them.
std::vector<std::string> clickhouse_schema_statements();

} // namespace posixtrace::cli
