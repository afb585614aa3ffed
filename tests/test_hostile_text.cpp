// Text a traced process controls (its event names, thread names, strings)
// reaches the operator's terminal and JSON readers harmlessly: no escape
// sequence, one event per line, the same characters said in escapes
// (docs/security.md).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <sstream>
#include <string>

#include "../userspace/cli/safe_text.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"

using namespace cli_support;
using posixtrace::cli::c_escaped;
using posixtrace::cli::json_string;
using posixtrace::cli::terminal_column;
using posixtrace::cli::terminal_text;

namespace {

// A byte that a terminal acts on: C0 but the newline ending a line, DEL, or
// the first byte of a UTF-8 C1 control or bidi override of the names below.
bool has_terminal_control(const std::string &text)
{
    for (unsigned char c : text)
        if ((c < 0x20 && c != '\n') || c == 0x7f)
            return true;
    return text.find("\xc2\x9b") != std::string::npos ||
           text.find("\xe2\x80\xae") != std::string::npos;
}

// late_names registers PREFIX.a, .b, .c and emits 3 events of each. This
// prefix holds a colour escape, CR LF, a right-to-left override (U+202E), a
// C1 CSI (U+009B) and a backslash; the shell makes it from octal escapes.
const char *kHostilePrefixArgument =
    R"sh("$(printf 'esc\033[31mred\033[0m\r\nnext\342\200\256\302\233\\')")sh";
const std::string kPrefixInText = R"(esc\033[31mred\033[0m\r\nnext\342\200\256\302\233\\)";
const std::string kPrefixInJson = R"(esc\u001b[31mred\u001b[0m\u000d\u000anext\u202e\u009b\\)";

int count_of(const std::string &text, const std::string &part)
{
    int count = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++count;
    return count;
}

void check_text_events(const std::string &out)
{
    INFO(out);
    CHECK_FALSE(has_terminal_control(out));
    for (const char *suffix : {".a", ".b", ".c"})
        CHECK(count_of(out, kPrefixInText + suffix + " ") == 3);
    int event_lines = 0; // one line per event: none spread over two
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
        event_lines += line.find(kPrefixInText) != std::string::npos;
    CHECK(event_lines == 9);
}

} // namespace

TEST_CASE("safe text: a terminal gets escapes for what would act on it", "[security]")
{
    CHECK(terminal_text("plain name.a") == "plain name.a");
    CHECK(terminal_text("caf\xc3\xa9 \xe6\x97\xa5") == "caf\xc3\xa9 \xe6\x97\xa5"); // UTF-8 stays
    CHECK(terminal_text("a\\b") == "a\\\\b"); // escapes read back unambiguously
    CHECK(terminal_text("\x1b[2J\n\r\t") == "\\033[2J\\n\\r\\t");
    CHECK(terminal_text(std::string("nul\0x", 5)) == "nul\\000x");
    CHECK(terminal_text("del\x7f") == "del\\177");
    CHECK(terminal_text("csi\xc2\x9b") == "csi\\302\\233");          // C1 as UTF-8
    CHECK(terminal_text("rlo\xe2\x80\xae") == "rlo\\342\\200\\256"); // bidi override
    CHECK(terminal_text("ls\xe2\x80\xa8") == "ls\\342\\200\\250");   // line separator
    CHECK(terminal_text("bad\xff\xc3") == "bad\\377\\303");          // not UTF-8, cut
    CHECK(terminal_text("over\xc0\xaf") == "over\\300\\257");        // overlong '/'
    CHECK(terminal_text("sur\xed\xa0\x80") == "sur\\355\\240\\200"); // surrogate
    CHECK(c_escaped("say \"hi\"", '"') == "say \\\"hi\\\"");         // TSDL, C literals
}

TEST_CASE("safe text: an escape is not read on into the digits after it", "[security]")
{
    // Three octal digits, never \x: C and TSDL take every hex digit after \x.
    CHECK(c_escaped("\x01" "abc") == "\\001abc");
    CHECK(c_escaped("\x1b" "1fix") == "\\0331fix");
    CHECK(c_escaped("\xff" "7") == "\\3777");
}

TEST_CASE("safe text: a terminal column is cut between escapes, never inside one", "[security]")
{
    CHECK(terminal_column("short", 8) == "short   ");
    CHECK(terminal_column("exactly.", 8) == "exactly.");
    CHECK(terminal_column("longer than 8", 8) == "longer t");
    CHECK(terminal_column("abcdef\x1b[0m", 8) == "abcdef  ");              // \033 needs 4 columns
    CHECK(terminal_column("abcd\x1b[0m", 8) == "abcd\\033");               // it fits whole
    CHECK(terminal_column("abcdefg\n", 8) == "abcdefg ");                  // \n needs 2
    CHECK(terminal_column("caf\xc3\xa9 au lait", 8) == "caf\xc3\xa9 au "); // one column each
    CHECK(terminal_column("abcdefg\xe6\x97\xa5", 8) == "abcdefg\xe6\x97\xa5");
    CHECK(terminal_column("abcdefgh\xe6\x97\xa5", 8) == "abcdefgh");
    CHECK(terminal_column("abcde\xe2\x80\xae", 8) == "abcde   "); // an override: 12 columns escaped
    CHECK(terminal_column("", 3) == "   ");
}

TEST_CASE("safe text: JSON strings escape controls and reordering characters", "[security]")
{
    CHECK(json_string("a\"b\\c") == R"("a\"b\\c")");
    CHECK(json_string("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
    CHECK(json_string("\x1b[0m\n") == R"("\u001b[0m\u000a")");
    CHECK(json_string("csi\xc2\x9b") == R"("csi\u009b")");
    CHECK(json_string("rlo\xe2\x80\xae") == R"("rlo\u202e")");
    CHECK(json_string("isolate\xe2\x81\xa6") == R"("isolate\u2066")");
    CHECK(json_string("bad\xff") == R"("bad\u00ff")"); // not UTF-8: as Latin-1
    CHECK(json_string("emoji\xf0\x9f\x98\x80") == "\"emoji\xf0\x9f\x98\x80\"");
}

TEST_CASE("cli: event names holding escape sequences and newlines print as one escaped line each",
          "[cli][security]")
{
    std::string command = "record --events user -- " + test_support::helper_path("late_names") +
                          " " + kHostilePrefixArgument + " 0";
    Run live = run_cli(command);
    REQUIRE(live.status == 0);
    check_text_events(live.out);

    Run json = run_cli("record --json --events user -- " + test_support::helper_path("late_names") +
                       " " + kHostilePrefixArgument + " 0");
    REQUIRE(json.status == 0);
    CHECK_FALSE(has_terminal_control(json.out));
    CHECK(count_of(json.out, "\"event\":\"" + kPrefixInJson + ".a\"") == 3);

    std::string log = temp_path("hostile-names");
    REQUIRE(run_cli("record --events user -o " + log + " -- " +
                    test_support::helper_path("late_names") + " " + kHostilePrefixArgument + " 0")
                .status == 0);
    Run dump = run_cli("dump " + log);
    REQUIRE(dump.status == 0);
    check_text_events(dump.out);

    // The CTF metadata names them in escaped TSDL literals that babeltrace2
    // parses back to the same names.
    std::string ctf = temp_path("hostile-ctf");
    unlink(ctf.c_str()); // export makes the directory
    REQUIRE(run_cli("export " + log + " --format ctf -o " + ctf).status == 0);
    Run babeltrace = run_shell("babeltrace2 " + ctf);
    REQUIRE(babeltrace.status == 0);
    CHECK(count_of(babeltrace.out, "next\xe2\x80\xae\xc2\x9b\\.a: {") == 3);
    run_shell("rm -rf " + ctf);
    unlink(log.c_str());
}
