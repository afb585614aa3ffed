#!/usr/bin/env bash
# make bench: the user event path of posixtrace next to its peers, in one run.
# Prints a table; BENCHMARKS.md keeps the latest figures.
set -uo pipefail
build=${1:-build}
bin=$build/bench/bench_user_event
lib=$(readlink -f "$build/lib/libposixtrace.so.1")
events=${BENCH_EVENTS:-2000000}
runs=${BENCH_RUNS:-3}

source "$(dirname "$0")/common.sh"

# Runs the bench in external mode under a bpftrace program; prints ns/event
# and, for a printing program, how many of the events its output is missing.
under_bpftrace() {
    local program=$1 out pid bt ready lost printed
    out=$(mktemp); ready=$(mktemp); printed=$(mktemp)
    "$bin" external "$events" >"$out" &
    pid=$!
    until grep -q ready "$out"; do sleep 0.05; done
    bpftrace -p "$pid" -o "$printed" -e "$program" 2>"$ready" &
    bt=$!
    for _ in $(seq 200); do grep -qs Attaching "$printed" "$ready" && break; sleep 0.05; done
    sleep 0.5
    kill -USR1 "$pid"
    wait "$pid"
    sleep 0.3
    kill -INT "$bt" 2>/dev/null; wait "$bt" 2>/dev/null >/dev/null
    if [[ $program == *printf* ]]; then
        lost="missing=$((events - $(grep -c '^\\x' "$printed")))" # payload lines start with \x
    else
        lost=""
    fi
    echo "$(field ns_per_event <"$out") $lost"
    rm -f "$out" "$ready" "$printed"
}

# One run of a command that prints "NS [NOTES]": appends NS to the array
# named by $1 and leaves NOTES in `extra`; anything else is a failed run,
# left in `failure`.
run_once() { # array-name, command...
    local -n into=$1; shift
    local line
    line=$("$@" | grep . | tail -n 1) # bpftrace prints blank lines on exit
    if [[ ! $line =~ ^[0-9.]+( |$) ]]; then
        failure="${line:-no output}"
        return 1
    fi
    into+=("$(echo "$line" | awk '{print $1}')")
    extra=$(echo "$line" | cut -s -d' ' -f2-)
}

row() { # label, ns, notes
    printf "| %-58s | %10.2f | %-28s |\n" "$1" "$2" "$3"
}

failed_row() { # label, runs failed, runs in all, failure
    printf "| %-58s | %10s | %-28s |\n" "$1" "-" "$2 of $3 runs failed: $4"
}

collect() { # label, command...
    local label=$1; shift
    local costs=() extra="" failure=""
    for _ in $(seq "$runs"); do
        run_once costs "$@"
    done
    if [ -n "$failure" ]; then # said, never a figure made of fewer runs
        failed_row "$label" "$((runs - ${#costs[@]}))" "$runs" "$failure"
        return
    fi
    row "$label" "$(printf '%s\n' "${costs[@]}" | median)" "$extra"
}

# Like collect, for two cases run one after the other, $runs times: the
# trap's cost drifts on some hosts from run to run, and alternating moves both
# cases alike. Commands are strings (eval). Prints both rows, the second with
# the ratio of the medians.
collect_pair() { # label-a command-a label-b command-b
    local costs_a=() costs_b=() extra="" extra_a="" failure=""
    for _ in $(seq "$runs"); do
        run_once costs_a eval "$2" && extra_a=$extra
        run_once costs_b eval "$4"
    done
    if [ -n "$failure" ]; then
        failed_row "$1 / $3" "$((2 * runs - ${#costs_a[@]} - ${#costs_b[@]}))" "$((2 * runs))" "$failure"
        return
    fi
    local median_a median_b
    median_a=$(printf '%s\n' "${costs_a[@]}" | median)
    median_b=$(printf '%s\n' "${costs_b[@]}" | median)
    row "$1" "$median_a" "$extra_a"
    row "$3" "$median_b" "$extra, $(awk -v a="$median_a" -v b="$median_b" 'BEGIN { printf "%.2fx", b / a }')"
}

echo "posix_trace_event() with a 64-byte payload, $events events per run, median of $runs runs"
echo "machine: $(nproc) CPUs, $(uname -r)"
echo
printf "| %-58s | %10s | %-28s |\n" "case" "ns/event" "notes"
printf "|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..60})" "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..30})"
collect "no stream (semaphore off)" bash -c "$bin untraced $((events * 50)) | grep -o 'ns_per_event=[0-9.]*' | cut -d= -f2"
collect "uprobe floor: empty BPF program on the probe (bpftrace {})" under_bpftrace "usdt:$lib:posix_trace:event { }"
stream_line() { "$bin" stream "$events" | awk '{for(i=1;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]} print v["ns_per_event"], "lost=" v["lost"]}'; }
mode_cost() { "$bin" "$1" "$events" | grep -o 'ns_per_event=[0-9.]*' | cut -d= -f2; }
uprobe_path() { POSIXTRACE_USER_EVENTS=kernel "$@"; } # as a stream of another process gets them
# The uprobe path's reference: what libbpf alone does on the same probe.
reference() { "$build/bench/usdt_reference" "$1" "$bin" "$lib" "$events" | awk '{for(i=1;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]} print v["ns_per_event"], "kept=" v["kept"] " lost=" v["lost"]}'; }
if [ -x "$build/bench/usdt_reference" ]; then
    collect "plain libbpf on the probe: empty program" reference empty
    collect_pair "plain libbpf: 64 bytes to a ring buffer, consumer thread" "reference copy" \
        "posixtrace uprobe path: stream, reader draining, alternated" "uprobe_path stream_line"
fi
collect "posixtrace lanes: stream suspended" mode_cost stream-suspended
collect "posixtrace lanes: event type filtered out" mode_cost stream-filtered
collect "posixtrace lanes: stream, reader draining with getnext" stream_line
collect "posixtrace uprobe path: stream suspended (program returns)" uprobe_path mode_cost stream-suspended
collect "posixtrace uprobe path: event type filtered out in the kernel" uprobe_path mode_cost stream-filtered
[ -x "$build/bench/usdt_reference" ] || # else alternated with the reference above
    collect "posixtrace uprobe path: stream, reader draining with getnext" uprobe_path stream_line
if [ -x "$build/bench/bench_lttng" ]; then
    collect "LTTng-UST 2.13: tracepoint not enabled (no session)" \
        bash -c "$build/bench/bench_lttng $events | grep -o 'ns_per_event=[0-9.]*' | cut -d= -f2"
    collect "LTTng-UST 2.13: session recording it to disk (discard mode)" \
        bench/lttng/run_lttng.sh "$build" "$events"
fi
collect "bpftrace: 64 bytes to its output (printf %r buf)" \
    under_bpftrace "usdt:$lib:posix_trace:event { printf(\"%r\\n\", buf(arg1, 64)); }"
echo
echo "sustained delivery, 2 emitting threads x $events events as fast as they can, default stream size (8 MiB), thread events filtered out:"
echo "lanes:        $("$bin" sustained "$events")"
echo "uprobe path:  $(POSIXTRACE_USER_EVENTS=kernel "$bin" sustained "$events")"
echo
echo "waking a reader: it blocks in getnext, one event at a time is emitted (1 ms apart, 500 in all);"
echo "us from posix_trace_event() to getnext's return, beside the same two threads handing off through an eventfd:"
echo "lanes:        $("$bin" wake 500)"
echo "uprobe path:  $(POSIXTRACE_USER_EVENTS=kernel "$bin" wake 500)"
echo
echo "where loss begins: 2 threads emitting together at a set rate for 2 s, a reader on getnext, thread events filtered out"
printf "| %-12s | %-12s | %12s | %12s | %14s |\n" path "events/s" emitted lost "delivered/s"
printf "|%s|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" \
    "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..16})"
for path in lanes uprobe; do
    for rate in 1000000 2000000 3000000 4000000 5000000 6000000 8000000; do
        [ $path = uprobe ] && [ $rate -gt 2000000 ] && continue # past what the trap allows here
        line=$(if [ $path = uprobe ]; then export POSIXTRACE_USER_EVENTS=kernel; fi
               "$bin" paced "$rate" "$rate") # each thread: rate/2 events/s for 2 s
        printf "| %-12s | %-12s | %12s | %12s | %14s |\n" "$path" "$rate" \
            "$(echo "$line" | field emitted)" "$(echo "$line" | field lost)" \
            "$(echo "$line" | field delivered_rate)"
    done
done
echo; bench/python_audit.sh "$build"
