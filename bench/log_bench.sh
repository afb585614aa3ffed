#!/usr/bin/env bash
# make bench, trace logs: sustained recording to a log on disk from 2 emitting
# threads next to the in-memory stream at the same rate, then dump and export
# speed and peak memory on a large log, next to babeltrace2 reading the same
# trace as CTF. LOG_EVENTS sets the large log's size (default 10 million).
set -uo pipefail
build=${1:-build}
bin=$build/bench/bench_log
cli=$build/bin/posixtrace
seconds=${LOG_SECONDS:-5}
events=${LOG_EVENTS:-10000000}
dir=$(mktemp -d /var/tmp/posixtrace-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT

value() { grep -o "$1=[0-9.]*" | head -1 | cut -d= -f2; }

echo "recording to a log on disk ($(df --output=source "$dir" | tail -1)), 2 emitting threads, 64-byte events, $seconds s per run"
printf "| %-24s | %-10s | %12s | %12s | %8s | %9s |\n" "case" "rate asked" "events/s" "emitted" "lost" "MB/s"
printf "|%s|%s|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..26})" "$(printf -- '-%.0s' {1..12})" \
    "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..11})"
for rate in 100000 200000 0; do
    asked=$([[ $rate == 0 ]] && echo "unpaced" || echo "$rate/s")
    line=$("$bin" memory "$rate" "$seconds")
    printf "| %-24s | %-10s | %12s | %12s | %8s | %9s |\n" "in-memory stream" "$asked" \
        "$(value events_per_s <<<"$line")" "$(value emitted <<<"$line")" "$(value lost <<<"$line")" "-"
    line=$("$bin" log "$dir/rate.log" "$rate" "$seconds")
    printf "| %-24s | %-10s | %12s | %12s | %8s | %9s |\n" "stream with log (FLUSH)" "$asked" \
        "$(value events_per_s <<<"$line")" "$(value emitted <<<"$line")" "$(value lost <<<"$line")" \
        "$(value mb_per_s <<<"$line")"
done

echo
echo "a log of $events events, written at 1,000,000 events/s (a rate the log keeps up with), then read back"
line=$("$bin" fill "$dir/big.log" "$events")
echo "written: $(value logged <<<"$line") events, $(value lost <<<"$line") lost, $(value log_mb <<<"$line") MB, $(value events_per_s <<<"$line") events/s"
timed() { # label, command...: events/s from the log's event count, peak RSS
    local label=$1; shift
    local secs rss
    /usr/bin/time -o "$dir/time.txt" -f "%e %M" "$@" >/dev/null 2>&1
    read -r secs rss <"$dir/time.txt"
    printf "| %-44s | %8.1f | %12.0f | %9.1f |\n" "$label" "$secs" \
        "$(awk -v n="$events" -v s="$secs" 'BEGIN {print (s > 0 ? n / s : 0)}')" \
        "$(awk -v k="$rss" 'BEGIN {print k / 1024}')"
}
printf "| %-44s | %8s | %12s | %9s |\n" "reader" "seconds" "events/s" "peak MB"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..46})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..11})"
timed "posixtrace dump" "$cli" dump "$dir/big.log"
timed "posixtrace dump --json" "$cli" dump "$dir/big.log" --json
timed "posixtrace export --format chrome" "$cli" export "$dir/big.log" --format chrome -o "$dir/big.json"
rm -f "$dir/big.json"
timed "posixtrace export --format ctf" "$cli" export "$dir/big.log" --format ctf -o "$dir/ctf"
timed "posixtrace report (HTML page)" "$cli" report "$dir/big.log" -o "$dir/big.html"
report_kb=$(awk -v b="$(stat -c %s "$dir/big.html")" 'BEGIN {printf "%.1f", b / 1024}')
# The page in a real browser: the time to load and first draw it, then its
# own timing of redraws (zoom from the whole trace to a millionth of it) and
# of a filter (report_assets.cpp, #measure).
page_timing=""
if command -v chromium >/dev/null; then
    start=$(date +%s.%N)
    dom=$(timeout 300 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
          --window-size=1400,900 --user-data-dir="$dir/chromium" \
          --dump-dom "file://$dir/big.html#measure" 2>/dev/null)
    secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
    attr() { grep -o "data-$1=\"[0-9.]*\"" <<<"$dom" | head -1 | cut -d'"' -f2; }
    page_timing="chromium --headless: $secs s to open and dump; page loaded and drawn in $(attr load-ms) ms; redraw at 31 zoom levels: mean $(attr redraw-mean-ms) ms, slowest $(attr redraw-max-ms) ms; filter $(attr filter-ms) ms"
fi
rm -f "$dir/big.html"
if command -v babeltrace2 >/dev/null; then
    timed "peer: babeltrace2 printing that CTF export" babeltrace2 "$dir/ctf"
fi
echo "the report's page: $report_kb KB"
if [ -n "$page_timing" ]; then echo "the report's page in a browser: $page_timing"; fi
