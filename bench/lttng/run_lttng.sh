#!/usr/bin/env bash
# The LTTng-UST peer of posixtrace's user events: runs bench_lttng COUNT
# inside an LTTng session that records its tracepoint to a temporary
# directory (default channel: per-CPU buffers, discard mode), and prints
# "NS_PER_EVENT discarded=N" (N: the events LTTng dropped, from its session
# statistics). Starts a session daemon if none runs, and stops it after.
#   bench/lttng/run_lttng.sh BUILD COUNT
set -uo pipefail
build=${1:?usage: run_lttng.sh BUILD COUNT}
count=${2:?usage: run_lttng.sh BUILD COUNT}
tmp=$(mktemp -d)
session=posixtrace-bench-$$
started=""
if ! pgrep -x lttng-sessiond >/dev/null; then
    lttng-sessiond --daemonize >/dev/null 2>&1 || { echo "lttng-sessiond failed" >&2; exit 1; }
    started=1
fi
cleanup() {
    lttng destroy "$session" >/dev/null 2>&1
    [ -n "$started" ] && pkill -x lttng-sessiond
    rm -rf "$tmp"
}
trap cleanup EXIT
lttng create "$session" --output="$tmp/trace" >/dev/null &&
    lttng enable-event -u posixtrace_bench:event >/dev/null &&
    lttng start >/dev/null || { echo "lttng session setup failed" >&2; exit 1; }
line=$("$build/bench/bench_lttng" "$count")
lttng stop >/dev/null 2>&1
discarded=$(lttng list "$session" 2>/dev/null | awk '/Discarded events:/ {n += $3} END {print n + 0}')
case $line in
*enabled=1*) echo "$(echo "$line" | grep -o 'ns_per_event=[0-9.]*' | cut -d= -f2) discarded=$discarded" ;;
*) echo "the tracepoint was not enabled: $line" >&2; exit 1 ;;
esac
