#!/usr/bin/env bash
# make bench: the cost of recording every context switch and wake-up of a
# process (thread events), next to its peers, in one run. Each case runs
# BENCH_RUNS times (default 3); the table shows the median.
set -uo pipefail
build=${1:-build}
pingpong=$build/bench/pingpong
posixtrace=$build/bin/posixtrace
trips=${BENCH_ROUND_TRIPS:-500000}
runs=${BENCH_RUNS:-3}
td_events=td:switchto,td:switchfrom,td:sleep,td:ready
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

source "$(dirname "$0")/common.sh"
seconds() { grep -o 'seconds=[0-9.]*' "$1" | cut -d= -f2; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
row() { printf "| %-62s | %8s | %8s | %-36s |\n" "$@"; }

untraced() { "$pingpong" "$trips" "$tmp/t"; seconds "$tmp/t"; }

# The four thread events of that process, printed as text by the CLI.
posixtrace_record() {
    "$posixtrace" record --events "$td_events" -- "$pingpong" "$trips" "$tmp/t" >/dev/null 2>"$tmp/err"
    grep -o '[0-9]* events, [0-9]* lost' "$tmp/err" | tr -d ',' >"$tmp/notes"
    seconds "$tmp/t"
}

# The same sched_switch / sched_wakeup events of that process, printed one a
# line by bpftrace (or only counted).
bpftrace_program() {
    local action_switch=$1 action_wakeup=$2
    bpftrace -o "$tmp/out" -c "$pingpong $trips $tmp/t" -e "
tracepoint:sched:sched_switch /args->prev_comm == \"pingpong\" || args->next_comm == \"pingpong\"/ { $action_switch }
tracepoint:sched:sched_wakeup /args->comm == \"pingpong\"/ { $action_wakeup }" 2>"$tmp/err" >/dev/null
    echo "$(grep -c '^[sw]' "$tmp/out") lines $(grep -o 'Lost [0-9]* events' "$tmp/err" | awk '{n += $2} END {print n + 0}') lost" >"$tmp/notes"
    seconds "$tmp/t"
}
bpftrace_print() {
    bpftrace_program 'printf("s %d %d %d %d\n", cpu, args->prev_pid, args->next_pid, args->prev_state);' \
                     'printf("w %d %d\n", args->pid, args->target_cpu);'
}
bpftrace_count() { bpftrace_program '@switches = count();' '@wakeups = count();'; sed -i 's/^0 lines/counted/' "$tmp/notes"; }

# What perf records of the same tracepoints for that command, to a file.
perf_record() {
    perf record -q -o "$tmp/perf.data" -e sched:sched_switch -e sched:sched_wakeup \
        -- "$pingpong" "$trips" "$tmp/t" >/dev/null 2>"$tmp/err"
    local samples lost
    samples=$(perf script -i "$tmp/perf.data" 2>/dev/null | wc -l)
    lost=$(grep -o 'lost [0-9]* chunks' "$tmp/err" | awk '{n += $2} END {print n + 0}')
    echo "$samples samples $lost lost chunks" >"$tmp/notes"
    seconds "$tmp/t"
}

# A posixtrace stream on another process: what the others pay.
elsewhere() {
    sleep 600 & local idle=$!
    "$posixtrace" record -p "$idle" --events "$td_events" >/dev/null 2>&1 & local recorder=$!
    sleep 1
    untraced
    kill -INT "$recorder"; wait "$recorder" 2>/dev/null; kill "$idle"; wait "$idle" 2>/dev/null
    : >"$tmp/notes"
}

base=""
measure() { # label, function
    local label=$1 function=$2 times=()
    for _ in $(seq "$runs"); do times+=("$($function)"); done
    local med; med=$(printf '%s\n' "${times[@]}" | median)
    [ -z "$base" ] && base=$med
    row "$label" "$med" "$(ratio "$med" "$base")" "$(cat "$tmp/notes" 2>/dev/null)"
    : >"$tmp/notes"
}

echo "Two threads pinned to CPU 0 ping-ponging through pipes, $trips round trips, median of $runs runs"
echo "machine: $(nproc) CPUs, $(uname -r)"
echo
row "case" "seconds" "slowdown" "events delivered / lost"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..64})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..38})"
: >"$tmp/notes"
measure "untraced" untraced
measure "posixtrace record --events td:switchto,switchfrom,sleep,ready" posixtrace_record
measure "bpftrace printf each sched_switch/sched_wakeup of it" bpftrace_print
measure "bpftrace counting them (no output)" bpftrace_count
command -v perf >/dev/null && measure "perf record -e sched:sched_switch,sched_wakeup" perf_record
measure "posixtrace tracing another process (same events)" elsewhere
