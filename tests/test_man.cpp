// The manual pages: each renders without a warning, and posixtrace(1)
// documents every subcommand and option the CLI's --help lists.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli_support.hpp"

using namespace cli_support;

namespace {

const std::string kManDir = std::string(POSIXTRACE_SOURCE_DIR) + "/man";

std::string file_text(const std::string &path)
{
    std::ifstream file(path);
    REQUIRE(file.good());
    return {std::istreambuf_iterator<char>(file), {}};
}

// "-p,--pid", "--events" ... as --help prints them in its Options section.
std::set<std::string> options_in_help(const std::string &help)
{
    std::set<std::string> options;
    static const std::regex option(R"(^\s+(-[a-z]),(--[a-z-]+)|^\s+(--[a-z][a-z-]*))");
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
        std::smatch match;
        if (!std::regex_search(line, match, option))
            continue;
        for (int group : {1, 2, 3})
            if (match[group].matched)
                options.insert(match[group]);
    }
    return options;
}

} // namespace

TEST_CASE("man: every page renders without a warning; every alias names a page", "[man]")
{
    size_t pages = 0;
    for (const auto &entry : std::filesystem::directory_iterator(kManDir)) {
        std::string path = entry.path().string();
        INFO(path);
        std::string text = file_text(path);
        if (text.rfind(".so ", 0) == 0) { // an alias: ".so man3/PAGE.3"
            std::string target = text.substr(4, text.find('\n') - 4);
            CHECK(std::filesystem::exists(kManDir + "/" +
                                          std::filesystem::path(target).filename().string()));
            continue;
        }
        ++pages;
        Run run = run_shell("MANWIDTH=80 man --warnings -l " + path + " >/dev/null");
        CHECK(run.status == 0);
        CHECK(run.err.empty());
    }
    CHECK(pages >= 5); // posixtrace(1), posixtrace(7) and the section 3 pages
}

TEST_CASE("man: every function of the extension headers has its page", "[man]")
{
    static const std::regex declaration(R"((?:^|\n)(?:int|td_err_e) (\w+)\()");
    size_t functions = 0;
    for (const char *header : {"events.h", "thread_db.h", "usdt.h"}) {
        std::string text =
            file_text(std::string(POSIXTRACE_SOURCE_DIR) + "/include/posix_trace/" + header);
        for (std::sregex_iterator it(text.begin(), text.end(), declaration), end; it != end; ++it) {
            std::string function = (*it)[1];
            INFO(header << ": " << function);
            CHECK(std::filesystem::exists(kManDir + "/" + function + ".3"));
            ++functions;
        }
    }
    CHECK(functions >= 18);
}

TEST_CASE("man: posixtrace(1) documents every subcommand and option of --help", "[man][cli]")
{
    std::string page = file_text(kManDir + "/posixtrace.1");
    for (const char *command : {"record", "dump", "export", "report", "probes", "threads"}) {
        INFO(command);
        CHECK(page.find(".Cm " + std::string(command)) != std::string::npos);
        Run help = run_cli(std::string(command) + " --help");
        REQUIRE(help.status == 0);
        std::set<std::string> options = options_in_help(help.out);
        CHECK(options.count("--help") == 1); // the parsing found the section
        for (const std::string &option : options) {
            INFO(option);
            // mdoc writes -p as "Fl p" and --pid as "Fl -pid".
            CHECK(page.find("Fl " + option.substr(1)) != std::string::npos);
        }
    }
}
