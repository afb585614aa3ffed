// The table behind `posixtrace threads` and the report's thread rows, fed TD
// events by hand: what it makes of tids the kernel hands out again.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "../userspace/cli/threads/thread_screen.hpp"
#include "../userspace/cli/threads/thread_table.hpp"

using posixtrace::cli::render_threads;
using posixtrace::cli::ScreenHeader;
using posixtrace::cli::ScreenLayout;
using posixtrace::cli::ThreadTable;

namespace {

td_event_data event_of(pid_t tid, const char *name, uint64_t value = 0)
{
    td_event_data data{};
    data.tid = tid;
    std::strncpy(data.name, name, sizeof data.name - 1);
    data.value = value;
    return data;
}

// `parent` creates `child`, which then runs under `name`.
void create(ThreadTable &table, pid_t parent, pid_t child, const char *name, uint64_t ns)
{
    table.apply(TD_CREATE, event_of(parent, "main", uint64_t(child)), ns);
    table.apply(TD_SWITCHTO, event_of(child, name), ns + 1);
}

void die(ThreadTable &table, pid_t tid, const char *name, uint64_t ns)
{
    table.apply(TD_DEATH, event_of(tid, name), ns);
}

size_t row_index(const std::vector<std::string> &lines, const std::string &name)
{
    auto found = std::find_if(lines.begin(), lines.end(), [&](const std::string &line) {
        return line.find(" " + name + " ") != std::string::npos;
    });
    return size_t(found - lines.begin());
}

} // namespace

TEST_CASE("threads table: a tid the kernel hands out again is a new thread", "[threads]")
{
    ThreadTable table;
    table.seed(100, "main", 'S', 0);
    create(table, 100, 101, "first", 10);
    table.apply(TD_SLEEP, event_of(101, "first"), 20);
    die(table, 101, "first", 30);
    create(table, 100, 101, "second", 40);

    REQUIRE(table.rows().size() == 3);
    const auto &gone = table.rows()[1];
    CHECK(gone.name == "first");
    CHECK(gone.exited);
    CHECK(gone.voluntary == 1);
    const auto *now = table.current(101);
    REQUIRE(now == &table.rows()[2]);
    CHECK(now->name == "second");
    CHECK_FALSE(now->exited);
    CHECK(now->created);
    CHECK(now->voluntary == 0); // the first thread's counts stay with it
    CHECK(table.live_rows() == 2);
    CHECK(table.totals().created == 2);
    CHECK(table.totals().exited == 1);
    CHECK(table.current(102) == nullptr);
}

TEST_CASE("threads screen: threads are listed in the order they appeared, even when tids wrap",
          "[threads]")
{
    ThreadTable table;
    table.seed(32760, "main", 'S', 0);
    create(table, 32760, 32761, "keeper", 10);
    for (pid_t worker = 300; worker < 340; ++worker) // past pid_max: tids start again low
        create(table, 32760, worker, ("churn-" + std::to_string(worker)).c_str(), 20 + worker);

    auto lines = render_threads(table, ScreenHeader{}, 1000, ScreenLayout{24, 0});
    CHECK(lines.size() == 24);
    size_t main = row_index(lines, "main"), keeper = row_index(lines, "keeper"),
           first_worker = row_index(lines, "churn-300");
    CHECK(main == 5); // right under the column names
    CHECK(keeper == 6);
    CHECK(first_worker == 7);
    CHECK(lines.back().find("... 24 more threads (24 live, 0 exited)") != std::string::npos);
}
