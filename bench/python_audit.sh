#!/usr/bin/env bash
# python3.11 raising N audit events (its python:audit USDT probe is guarded by
# a semaphore): untraced, traced by posixtrace record with the event name
# decoded in the kernel, and traced by bpftrace printing the same string.
# The loop times itself, so the tools' start-up does not count.
set -uo pipefail
build=${1:-build}
cli=$build/bin/posixtrace
python=/usr/bin/python3.11
events=${BENCH_AUDIT_EVENTS:-1000000}
runs=${BENCH_RUNS:-3}
script="import sys, time
t = time.perf_counter()
for i in range($events): sys.audit('posixtrace.bench', i)
sys.stderr.write('loop_seconds=%f\n' % (time.perf_counter() - t))"

script_file=$(mktemp --suffix=.py)
trap 'rm -f "$script_file"' EXIT
printf '%s\n' "$script" >"$script_file"

source "$(dirname "$0")/common.sh"
loop_seconds() { grep -o 'loop_seconds=[0-9.]*' "$1" | cut -d= -f2; }

untraced() {
    local err; err=$(mktemp)
    "$python" "$script_file" 2>"$err"
    echo "$(loop_seconds "$err") 0"
    rm -f "$err"
}

posixtrace() {
    local out err; out=$(mktemp); err=$(mktemp)
    "$cli" record --events usdt:python:audit --usdt-arg-str python:audit:0 -- "$python" "$script_file" \
        >"$out" 2>"$err"
    echo "$(loop_seconds "$err") $((events - $(grep -c 'str="posixtrace.bench"' "$out")))"
    rm -f "$out" "$err"
}

bpftrace_run() {
    local out err; out=$(mktemp); err=$(mktemp)
    bpftrace -o "$out" -e "usdt:$python:python:audit { printf(\"%s\\n\", str(arg0)); }" \
        -c "$python $script_file" 2>"$err" >/dev/null
    echo "$(loop_seconds "$err") $((events - $(grep -c '^posixtrace.bench$' "$out")))"
    rm -f "$out" "$err"
}

row() { # label function
    local label=$1 fn=$2 times=() lost=0 line
    for _ in $(seq "$runs"); do
        line=$($fn)
        times+=("${line% *}")
        lost=$((lost > ${line#* } ? lost : ${line#* }))
    done
    local t; t=$(printf '%s\n' "${times[@]}" | median)
    printf "| %-52s | %9.3f | %8.2fx | %12s |\n" "$label" "$t" \
        "$(awk -v t="$t" -v b="$base" 'BEGIN { print t / b }')" "$lost"
}

echo "python3.11 raising $events audit events, median of $runs runs (max events lost over the runs)"
printf "| %-52s | %9s | %9s | %12s |\n" "case" "loop (s)" "slowdown" "events lost"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..54})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..14})"
base=$(for _ in $(seq "$runs"); do untraced | cut -d' ' -f1; done | median)
printf "| %-52s | %9.3f | %8.2fx | %12s |\n" "untraced" "$base" 1 -
row "posixtrace record, usdt:python:audit, name decoded" posixtrace
row "bpftrace printf(\"%s\", str(arg0)) on python:audit" bpftrace_run
