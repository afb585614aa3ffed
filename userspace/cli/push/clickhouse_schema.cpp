#include "clickhouse_schema.hpp"

#include <sstream>

namespace posixtrace::cli {
namespace {

const char *const kSchema =
#include "clickhouse_schema.inc"
    ;

std::string without_comment(const std::string &line)
{
    return line.substr(0, line.find("--"));
}

bool blank(const std::string &text)
{
    return text.find_first_not_of(" \t\n") == std::string::npos;
}

} // namespace

// The schema's own text has no ';' or "--" inside a string literal.
std::vector<std::string> clickhouse_schema_statements()
{
    std::vector<std::string> statements;
    std::istringstream lines(kSchema);
    std::string statement;
    for (std::string line; std::getline(lines, line);) {
        line = without_comment(line);
        for (size_t end; (end = line.find(';')) != std::string::npos; line.erase(0, end + 1)) {
            statement += line.substr(0, end);
            if (!blank(statement))
                statements.push_back(statement);
            statement.clear();
        }
        statement += line + "\n";
    }
    if (!blank(statement))
        statements.push_back(statement);
    return statements;
}

} // namespace posixtrace::cli
