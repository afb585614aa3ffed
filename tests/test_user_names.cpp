// User event names travel with the events: registered before or after the
// attach, in a child, in an exec'd image, they name every event of a live
// stream, a log, dump and both exports, after the process is gone; and the
// processes one stream traces by inheritance share one numbering (POSIX,
// posix_trace_eventid_open with the Trace Inherit option).
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "test_support.hpp"

using namespace test_support;
using namespace cli_support;

namespace {

// `"event":"NAME"` of every JSON line, counted.
std::map<std::string, int> json_event_names(const Run &run)
{
    std::map<std::string, int> names;
    for (const auto &line : run.lines()) {
        auto at = line.find("\"event\":\"");
        if (at == std::string::npos)
            continue;
        at += 9;
        names[line.substr(at, line.find('"', at) - at)]++;
    }
    return names;
}

size_t count_containing(const std::vector<std::string> &lines, const std::string &text)
{
    size_t count = 0;
    for (const auto &line : lines)
        count += line.find(text) != std::string::npos;
    return count;
}

std::string event_name_of(trace_id_t trid, trace_event_id_t id)
{
    char name[TRACE_EVENT_NAME_MAX] = {};
    if (posix_trace_eventid_get_name(trid, id, name) != 0)
        return "<no name>";
    return name;
}

} // namespace

TEST_CASE("names: a short-lived process that names its events late is named live",
          "[names][self-tracing]")
{
    Run run = run_cli("record --json --events user -- " + helper_path("late_names"));
    REQUIRE(run.status == 0);
    auto names = json_event_names(run);
    CHECK(names == std::map<std::string, int>{{"late.a", 3}, {"late.b", 3}, {"late.c", 3}});
}

TEST_CASE("names: a log written by record -o names every event, in dump and both exports",
          "[names][log][self-tracing]")
{
    std::string log = temp_path("names-log");
    Run record = run_cli("record --events user -o " + log + " -- " + helper_path("late_names"));
    REQUIRE(record.status == 0);
    Run dump = run_cli("dump --json " + log);
    REQUIRE(dump.status == 0);
    CHECK(json_event_names(dump) ==
          std::map<std::string, int>{{"late.a", 3}, {"late.b", 3}, {"late.c", 3}});

    std::string chrome = log + ".json", ctf = log + "-ctf";
    REQUIRE(run_cli("export " + log + " --format chrome -o " + chrome).status == 0);
    Run chrome_names = run_shell("grep -o '\"name\": *\"late\\.[abc]\"' " + chrome + " | wc -l");
    CHECK(std::atoi(chrome_names.out.c_str()) >= 9);
    REQUIRE(run_cli("export " + log + " --format ctf -o " + ctf).status == 0);
    Run ctf_text = run_shell("babeltrace2 " + ctf);
    REQUIRE(ctf_text.status == 0);
    for (const char *name : {"late.a", "late.b", "late.c"}) {
        INFO(name);
        CHECK(count_containing(ctf_text.lines(), name) == 3);
    }
    CHECK(count_containing(ctf_text.lines(), "user#") == 0);
    unlink(log.c_str());
    unlink(chrome.c_str());
    run_shell("rm -rf " + ctf);
}

TEST_CASE("names: exec'd images that number their names alike keep them apart",
          "[names][self-tracing]")
{
    std::string helper = helper_path("late_names");
    Run run = run_cli("record --inherit --json --events user -- /bin/sh -c '" + helper +
                      " first & " + helper + " second; wait'");
    REQUIRE(run.status == 0);
    std::map<std::string, std::set<std::string>> ids_of_name;
    for (const auto &line : run.lines()) {
        auto name_at = line.find("\"event\":\"") + 9, id_at = line.find("\"id\":") + 5;
        std::string name = line.substr(name_at, line.find('"', name_at) - name_at);
        ids_of_name[name].insert(line.substr(id_at, line.find_first_of(",}", id_at) - id_at));
    }
    CHECK(json_event_names(run) == std::map<std::string, int>{{"first.a", 3},
                                                              {"first.b", 3},
                                                              {"first.c", 3},
                                                              {"second.a", 3},
                                                              {"second.b", 3},
                                                              {"second.c", 3}});
    std::set<std::string> all_ids;
    for (const auto &[name, ids] : ids_of_name) {
        INFO(name);
        CHECK(ids.size() == 1); // one id per name
        all_ids.insert(ids.begin(), ids.end());
    }
    CHECK(all_ids.size() == ids_of_name.size()); // and one name per id
}

TEST_CASE("names: a child exec'ing a program linked with the tracing process's libposixtrace is "
          "traced from its first event",
          "[names][inherit][self-tracing]")
{
    // An inheriting stream attaches in an object for every process that
    // maps it: the exec'd image (named early.*, emitting at once) needs no
    // attach of its own, so nothing it does precedes its probes.
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    REQUIRE(posix_trace_attr_setinherited(&attr, POSIX_TRACE_INHERITED) == 0);
    StreamGuard stream = make_stream(&attr);
    posix_trace_attr_destroy(&attr);
    filter_thread_events(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    std::string program = helper_path("late_names");
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        execl(program.c_str(), program.c_str(), "early", "0", static_cast<char *>(nullptr));
        _exit(127);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::map<std::string, int> seen;
    for (const auto &event : read_available(stream.get()))
        if (event.info.posix_pid == child)
            seen[event_name_of(stream.get(), event.info.posix_event_id)]++;
    CHECK(seen["early.a"] == 3);
    CHECK(seen["early.b"] == 3);
    CHECK(seen["early.c"] == 3);
}

TEST_CASE("names: a parent and its child naming events after fork get distinct ids",
          "[names][inherit][self-tracing]")
{
    trace_attr_t attr;
    posix_trace_attr_init(&attr);
    REQUIRE(posix_trace_attr_setinherited(&attr, POSIX_TRACE_INHERITED) == 0);
    StreamGuard stream = make_stream(&attr);
    posix_trace_attr_destroy(&attr);
    filter_thread_events(stream.get());
    REQUIRE(posix_trace_start(stream.get()) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        trace_event_id_t id;
        int value = 1;
        if (posix_trace_eventid_open("names.fork.child", &id) != 0)
            _exit(1);
        posix_trace_event(id, &value, sizeof value);
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    trace_event_id_t parent_id;
    REQUIRE(posix_trace_eventid_open("names.fork.parent", &parent_id) == 0);
    int value = 2;
    posix_trace_event(parent_id, &value, sizeof value);
    REQUIRE(posix_trace_stop(stream.get()) == 0);

    std::map<std::string, std::pair<pid_t, trace_event_id_t>> seen;
    for (const auto &event : read_available(stream.get())) {
        std::string name = event_name_of(stream.get(), event.info.posix_event_id);
        if (name.rfind("names.fork.", 0) == 0)
            seen[name] = {event.info.posix_pid, event.info.posix_event_id};
    }
    REQUIRE(seen.size() == 2);
    CHECK(seen["names.fork.child"].first == child);
    CHECK(seen["names.fork.parent"].first == getpid());
    CHECK(seen["names.fork.child"].second != seen["names.fork.parent"].second);
    CHECK(seen["names.fork.parent"].second == parent_id);
    // The child's name is the parent's too: one numbering for the family.
    trace_event_id_t child_id;
    REQUIRE(posix_trace_eventid_open("names.fork.child", &child_id) == 0);
    CHECK(child_id == seen["names.fork.child"].second);
}
