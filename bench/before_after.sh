#!/usr/bin/env bash
# The cost of a change to the recording path, measured in one run: builds
# REV (e.g. the commit before the change) in a temporary worktree, then runs
# the user-event and thread-switch cases for REV and for the working tree,
# alternating, BENCH_RUNS times each; prints medians and after/before.
#   bench/before_after.sh REV [BUILD]      (BUILD: this tree's build, default build)
set -uo pipefail
rev=${1:?usage: bench/before_after.sh REV [BUILD]}
after=${2:-build}
runs=${BENCH_RUNS:-5}
events=${BENCH_EVENTS:-2000000}
trips=${BENCH_ROUND_TRIPS:-500000}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/tree" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/tree" "$rev" || exit 1
make -s -C "$tmp/tree" -j"$(nproc)" BUILD=build all >/dev/null 2>&1 || { echo "building $rev failed"; exit 1; }
before=$tmp/tree/build

source "$(dirname "$0")/common.sh"

# ns per posix_trace_event() with a reader draining the stream (64 bytes)
user_event() { "$1/bench/bench_user_event" stream "$events" | field ns_per_event; }
# events per second delivered to a reader from 2 emitting threads
sustained() { "$1/bench/bench_user_event" sustained "$events" | field delivered_rate; }
# seconds of the ping-pong while recording its switches and wake-ups
switches() {
    "$1/bin/posixtrace" record --events td:switchto,td:switchfrom,td:sleep,td:ready \
        -- "$1/bench/pingpong" "$trips" "$tmp/t" >/dev/null 2>&1
    field seconds <"$tmp/t"
}
# seconds of the ping-pong while a stream records those events of another process
elsewhere() {
    sleep 600 & local idle=$!
    "$1/bin/posixtrace" record -p "$idle" --events td:switchto,td:switchfrom,td:sleep,td:ready \
        >/dev/null 2>&1 & local recorder=$!
    sleep 1
    "$1/bench/pingpong" "$trips" "$tmp/t" >/dev/null
    kill -INT "$recorder"; wait "$recorder" 2>/dev/null; kill "$idle"; wait "$idle" 2>/dev/null
    field seconds <"$tmp/t"
}

echo "before: $rev ($(git rev-parse --short "$rev")), after: the working tree ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', modified'))"
echo "medians of $runs alternating runs; $events events, $trips round trips; $(nproc) CPUs, $(uname -r)"
echo
printf "| %-62s | %12s | %12s | %8s |\n" "case" "before" "after" "after/before"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..64})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..10})"
for case in "user_event:posix_trace_event(), stream read by a reader (ns/event)" \
            "sustained:delivered to a reader from 2 threads (events/s)" \
            "switches:ping-pong, its switches and wake-ups recorded (s)" \
            "elsewhere:ping-pong, a stream on another process (s)"; do
    name=${case%%:*}; label=${case#*:}
    b=(); a=()
    for _ in $(seq "$runs"); do
        b+=("$($name "$before")")
        a+=("$($name "$after")")
    done
    mb=$(printf '%s\n' "${b[@]}" | median); ma=$(printf '%s\n' "${a[@]}" | median)
    printf "| %-62s | %12s | %12s | %8s |\n" "$label" "$mb" "$ma" "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", a / b }')"
done
