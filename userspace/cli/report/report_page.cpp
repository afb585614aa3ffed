#include "report_page.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iterator>

#include "../event_format.hpp"
#include "../export/output_file.hpp"
#include "report_assets.hpp"

namespace posixtrace::cli {
namespace {

struct Replacement {
    char c;
    const char *with;
};

template <size_t N>
std::string replaced(const std::string &text, const Replacement (&replacements)[N])
{
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        auto found = std::find_if(std::begin(replacements), std::end(replacements),
                                  [c](const Replacement &r) { return r.c == c; });
        if (found == std::end(replacements))
            out += c;
        else
            out += found->with;
    }
    return out;
}

std::string html_escape(const std::string &text)
{
    static const Replacement html[] = {
        {'<', "&lt;"}, {'>', "&gt;"}, {'&', "&amp;"}, {'"', "&quot;"}};
    return replaced(text, html);
}

// A JSON text that can sit inside a <script> element. Escaping only "</"
// is not enough: "<!--" then "<script" puts the HTML parser in its
// double-escaped state, where the closing </script> no longer ends the
// element. Outside strings JSON has no '<', '>' or '&', inside them the
// \u escapes mean the same characters, so the block holds none of them.
std::string script_safe(const std::string &json)
{
    static const Replacement script[] = {{'<', "\\u003c"}, {'>', "\\u003e"}, {'&', "\\u0026"}};
    return replaced(json, script);
}

std::string seconds_text(uint64_t ns)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.6f s", double(ns) / 1e9);
    return text;
}

template <typename T, typename F> std::string json_array(const std::vector<T> &items, F each)
{
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
        if (i)
            out += ',';
        out += each(items[i]);
    }
    return out + "]";
}

std::string lane_json(const Lane &lane)
{
    std::string out = "{\"pid\":" + std::to_string(lane.pid) +
                      ",\"tid\":" + std::to_string(lane.tid) +
                      ",\"name\":" + json_string(lane.name) +
                      ",\"renames\":" + json_array(lane.renames, json_string) + ",\"spans\":[";
    for (size_t i = 0; i < lane.spans.size(); ++i) {
        const StateSpan &span = lane.spans[i];
        out += (i ? "," : "") + std::to_string(span.begin_ns) + ',' + std::to_string(span.end_ns) +
               ',' + std::to_string(int(span.state)) + ',' + std::to_string(span.cpu);
    }
    out += "],\"markers\":[";
    for (size_t i = 0; i < lane.markers.size(); ++i) {
        const Marker &marker = lane.markers[i];
        out += (i ? "," : "") + std::to_string(marker.at_ns) + ',' + std::to_string(marker.kind) +
               ',' + std::to_string(marker.detail);
    }
    out += "],\"density\":";
    out += lane.marker_density.empty()
               ? std::string("null")
               : json_array(lane.marker_density, [](uint32_t n) { return std::to_string(n); });
    return out + "}";
}

std::string data_json(const Timeline &timeline)
{
    std::string out = "{\"start_ns\":\"" + std::to_string(timeline.first_ns()) + "\"";
    out += ",\"span_ns\":" + std::to_string(timeline.span_ns());
    out += ",\"states\":[";
    for (int state = 0; state <= int(LaneState::exited); ++state)
        out += std::string(state ? "," : "") + "\"" + state_name(LaneState(state)) + "\"";
    out += "],\"kinds\":" + json_array(timeline.kinds(), json_string);
    out += ",\"details\":" + json_array(timeline.details(), json_string);
    out += ",\"processes\":[";
    bool first = true;
    for (const auto &[pid, name] : timeline.processes()) {
        out += std::string(first ? "" : ",") + "{\"pid\":" + std::to_string(pid) +
               ",\"name\":" + json_string(name) + "}";
        first = false;
    }
    out += "],\"lanes\":[";
    first = true;
    for (const auto &[tid, lane] : timeline.lanes()) {
        out += (first ? "" : ",") + lane_json(lane);
        first = false;
    }
    out += "],\"process_marks\":" + json_array(timeline.process_marks(), [](const ProcessMark &m) {
               return "[" + std::to_string(m.at_ns) + "," + std::to_string(m.pid) + "," +
                      json_string(m.kind) + "," + json_string(m.text) + "]";
           });
    out += ",\"losses\":" + json_array(timeline.losses(), [](const LossMark &m) {
               return "[" + std::to_string(m.at_ns) + "," + std::to_string(m.tid) + "," +
                      std::to_string(m.lost) + "," + std::to_string(m.in_kernel) + "," +
                      std::to_string(m.in_stream) + "]";
           });
    return out + "}";
}

// A row per lane: the thread's totals from its TD events (none for a thread
// seen only through user or USDT events).
std::string thread_rows(const Timeline &timeline)
{
    std::string out;
    uint64_t end = timeline.first_ns() + timeline.span_ns();
    static const ThreadRow no_thread_events;
    for (const auto &[tid, lane] : timeline.lanes()) {
        const ThreadRow *found = timeline.threads().current(tid);
        const ThreadRow &row = found ? *found : no_thread_events;
        pid_t pid = lane.pid;
        out += "<tr><td>" + html_escape(lane.name) + "</td><td>" + std::to_string(tid) +
               "</td><td>" + std::to_string(pid) + "</td><td>" + seconds_text(row.run_time(end)) +
               "</td><td>" + std::to_string(row.voluntary) + "</td><td>" +
               std::to_string(row.involuntary) + "</td><td>" + std::to_string(row.lock_waits) +
               "</td><td>" + std::to_string(row.signals) + "</td><td>" +
               (row.exited    ? "exited"
                : row.created ? "created"
                              : "") +
               "</td></tr>\n";
    }
    return out;
}

std::string count_rows(const Timeline &timeline)
{
    std::vector<std::pair<std::string, uint64_t>> counts(timeline.counts_by_type().begin(),
                                                         timeline.counts_by_type().end());
    std::sort(counts.begin(), counts.end(),
              [](const auto &a, const auto &b) { return a.second > b.second; });
    std::string out;
    for (const auto &[name, count] : counts)
        out +=
            "<tr><td>" + html_escape(name) + "</td><td>" + std::to_string(count) + "</td></tr>\n";
    return out;
}

std::string summary_html(const Timeline &timeline, const ReportSource &source)
{
    std::string processes;
    for (const auto &[pid, name] : timeline.processes())
        processes +=
            (processes.empty() ? "" : ", ") + html_escape(name) + " (" + std::to_string(pid) + ")";
    std::string out = "<p id=\"summary\">" + std::to_string(timeline.events()) + " events over " +
                      seconds_text(timeline.span_ns()) + ", " +
                      std::to_string(timeline.lanes().size()) + " threads of " +
                      (processes.empty() ? std::string("no process") : processes) + "; " + "<b>" +
                      std::to_string(timeline.lost()) + " events lost</b>.</p>\n";
    if (timeline.lost())
        out += "<div class=\"lossnote\">" + std::to_string(timeline.lost()) +
               " events were lost while recording: the red lines across the lanes show where, "
               "with their counts.</div>\n";
    if (source.status.posix_log_overrun_status == POSIX_TRACE_OVERRUN)
        out += "<div class=\"note\" id=\"wrapped\">The log wrapped (POSIX_TRACE_LOOP): its oldest "
               "events were overwritten, the page starts after them.</div>\n";
    else if (source.status.posix_log_full_status == POSIX_TRACE_FULL)
        out += "<div class=\"note\" id=\"log-full\">The log was full "
               "(POSIX_TRACE_UNTIL_FULL): the events after it filled were not written.</div>\n";
    if (!source.reading_problem.empty())
        out +=
            "<div class=\"note\" id=\"damage\">" + html_escape(source.reading_problem) + "</div>\n";
    if (std::string note = timeline.aggregation_note(); !note.empty())
        out += "<div class=\"note\" id=\"aggregated\">" + html_escape(note) + "</div>\n";
    // A long table would push the timeline off the first screen.
    out += std::string("<details") + (timeline.lanes().size() <= 8 ? " open" : "") +
           "><summary>Threads</summary><table id=\"threads\"><tr><th>thread</th>"
           "<th>tid</th><th>pid</th><th>run time</th><th>voluntary switches</th>"
           "<th>involuntary</th><th>lock waits</th><th>signals</th><th></th></tr>\n" +
           thread_rows(timeline) + "</table></details>\n";
    out += "<details><summary>Events by type</summary><table id=\"counts\"><tr><th>event</th>"
           "<th>count</th></tr>\n" +
           count_rows(timeline) + "</table></details>\n";
    return out;
}

} // namespace

void write_report_page(const std::string &path, const Timeline &timeline,
                       const ReportSource &source)
{
    OutputFile out(path);
    std::string title = "posixtrace report: " + source.log_path;
    out.write("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
              html_escape(title) + "</title>\n<style>" + report_style() + "</style></head>\n");
    out.write("<body><header><h1>" + html_escape(title) + "</h1>\n");
    out.write(summary_html(timeline, source));
    out.write("</header>\n<div id=\"controls\"><input id=\"filter\" type=\"search\" "
              "placeholder=\"filter: thread or event name\"><button id=\"reset\">whole "
              "trace</button><span id=\"legend\"></span><span>wheel: zoom, drag: pan</span></div>\n"
              "<div id=\"timeline\"><div id=\"labels\"></div><div id=\"canvas-box\">"
              "<canvas id=\"canvas\"></canvas></div></div><div id=\"tip\"></div>\n");
    out.write("<script type=\"application/json\" id=\"trace-data\">");
    out.write(script_safe(data_json(timeline)));
    out.write("</script>\n<script>");
    out.write(report_script());
    out.write("</script></body></html>\n");
    out.close();
}

} // namespace posixtrace::cli
