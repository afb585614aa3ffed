#!/usr/bin/env bash
# The LTTng-UST peer of posixtrace's user events: runs bench_lttng COUNT
# [THREADS] inside an LTTng session that records its tracepoint to a
# temporary directory (per-CPU buffers, discard mode: the default channel, or
# with SUBBUFS set to "COUNTxSIZE", e.g. 8x8M, a channel of those
# sub-buffers), and prints "NS_PER_EVENT discarded=N tracer_cpu_per_event_ns=C"
# (N: the events LTTng dropped, from its session statistics; C: the CPU time
# its consumer daemons spent from the start of the burst to the end of
# `lttng stop`, which waits for them to write what the buffers hold, per
# event emitted; left out when no consumer daemon could be found). Starts a
# session daemon if none runs, and stops it after.
#   [SUBBUFS=8x8M] bench/lttng/run_lttng.sh BUILD COUNT [THREADS]
set -uo pipefail
build=${1:?usage: run_lttng.sh BUILD COUNT}
count=${2:?usage: run_lttng.sh BUILD COUNT}
threads=${3:-1}
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
# The nanoseconds every thread of every consumer daemon has run; nothing
# when no consumer daemon runs.
consumer_cpu_ns() {
    local total=0 pid stat pids
    pids=$(pgrep -x lttng-consumerd) || return
    for pid in $pids; do
        for stat in /proc/"$pid"/task/*/schedstat; do
            total=$((total + $(cut -d' ' -f1 "$stat" 2>/dev/null || echo 0)))
        done
    done
    echo "$total"
}
channel=()
if [ -n "${SUBBUFS:-}" ]; then
    lttng create "$session" --output="$tmp/trace" >/dev/null &&
        lttng enable-channel -u bench --num-subbuf="${SUBBUFS%x*}" \
            --subbuf-size="${SUBBUFS#*x}" >/dev/null || { echo "lttng channel setup failed" >&2; exit 1; }
    channel=(--channel=bench)
else
    lttng create "$session" --output="$tmp/trace" >/dev/null || { echo "lttng create failed" >&2; exit 1; }
fi
lttng enable-event -u "${channel[@]}" posixtrace_bench:event >/dev/null &&
    lttng start >/dev/null || { echo "lttng session setup failed" >&2; exit 1; }
consumer_before=$(consumer_cpu_ns)
line=$("$build/bench/bench_lttng" "$count" "$threads")
lttng stop >/dev/null 2>&1
consumer_after=$(consumer_cpu_ns)
tracer=""
if [ -n "$consumer_before" ] && [ -n "$consumer_after" ]; then
    tracer="tracer_cpu_per_event_ns=$(awk -v ns="$((consumer_after - consumer_before))" -v n="$count" \
        'BEGIN {printf "%.1f", ns / n}')"
fi
discarded=$(lttng list "$session" 2>/dev/null | awk '/Discarded events:/ {n += $3} END {print n + 0}')
case $line in
*enabled=1*)
    echo "$(echo "$line" | grep -o 'ns_per_event=[0-9.]*' | cut -d= -f2) discarded=$discarded $tracer" ;;
*) echo "the tracepoint was not enabled: $line" >&2; exit 1 ;;
esac
