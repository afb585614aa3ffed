#!/usr/bin/env bash
# make bench: what a stream keeps of a burst of user events emitted flat out,
# next to LTTng-UST given the same burst in the same run; then what a
# stream's life costs (create, start, shutdown). Prints two tables;
# BENCHMARKS.md keeps the latest figures.
#   bench/burst.sh BUILD
set -uo pipefail
build=${1:-build}
bin=$build/bench/bench_burst
events=${BENCH_BURST_EVENTS:-2000000}
runs=${BENCH_RUNS:-3}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

source "$(dirname "$0")/common.sh"

# label, command printing "tracer_cpu_per_event_ns=.. ns_per_event=..
# kept=..": the medians of the ns and of the tracer's CPU, and the smallest
# and largest kept over the runs; a failed run is said, never hidden.
burst_row() {
    local label=$1; shift
    local costs=() tracer=() kept=() line
    for _ in $(seq "$runs"); do
        line=$("$@" 2>&1 | tail -n 1)
        if [[ ! $line =~ ns_per_event=[0-9.]+.*kept=[0-9]+ ]]; then
            printf "| %-52s | %9s | %10s | %-27s |\n" "$label" "-" "-" "failed: ${line:-no output}"
            return
        fi
        costs+=("$(echo "$line" | field ns_per_event)")
        tracer+=("$(echo "$line" | field tracer_cpu_per_event_ns)")
        kept+=("$(echo "$line" | field kept)")
    done
    local least most tracer_median=-
    least=$(printf '%s\n' "${kept[@]}" | sort -n | head -1)
    most=$(printf '%s\n' "${kept[@]}" | sort -n | tail -1)
    # A run that could not measure it says nothing: no figure then, not 0.
    if ! printf '%s\n' "${tracer[@]}" | grep -qx ''; then
        tracer_median=$(printf '%.1f' "$(printf '%s\n' "${tracer[@]}" | median)")
    fi
    printf "| %-52s | %9.1f | %10s | %12d – %12d |\n" "$label" \
        "$(printf '%s\n' "${costs[@]}" | median)" "$tracer_median" "$least" "$most"
}

# LTTng's kept: what it was given less what it says it discarded.
lttng_burst() { # threads [COUNTxSIZE sub-buffers]
    local line
    line=$(SUBBUFS=${2:-} bench/lttng/run_lttng.sh "$build" "$events" "$1") || return
    echo "tracer_cpu_per_event_ns=$(echo "$line" | field tracer_cpu_per_event_ns)" \
        "ns_per_event=$(echo "$line" | awk '{print $1}') kept=$((events - $(echo "$line" | field discarded)))"
}

echo "A burst of $events user events of 64 bytes, flat out; ns/event in the emitting"
echo "threads (median of $runs runs); the tracer's CPU beyond them, ns/event (median:"
echo "posixtrace's drain and log threads and the calls that stop and flush the stream,"
echo "LTTng's consumer daemons until \`lttng stop\` returns); and the events read back"
echo "(least – most of the runs)"
echo "machine: $(nproc) CPUs, $(uname -r)"
echo
printf "| %-52s | %9s | %10s | %-27s |\n" "case" "ns/event" "tracer CPU" "kept"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..54})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..29})"
for threads in 1 2; do
    burst_row "posixtrace, 512 MiB UNTIL_FULL stream, $threads thread(s)" "$bin" memory "$threads" "$events"
    burst_row "posixtrace, 64 MiB FLUSH stream + log, $threads thread(s)" "$bin" log "$threads" "$events" "$log/burst.log"
    if [ -x "$build/bench/bench_lttng" ]; then
        burst_row "LTTng-UST 2.13, default channel, $threads thread(s)" lttng_burst "$threads"
        burst_row "LTTng-UST 2.13, 8 x 8 MiB sub-buffers, $threads thread(s)" lttng_burst "$threads" 8x8M
    fi
done

if [ -x "$build/bench/bench_log_floor" ]; then
    echo
    if floor=$("$build/bench/bench_log_floor" "$log" 2>&1); then
        echo "The least a log's side costs here, whatever its design (CPU ns an event; no"
        echo "posixtrace code): taking the records another CPU just wrote, a whole chunk"
        echo "at a time $(echo "$floor" | field take_whole) or each re-encoded $(echo "$floor" | field take_each);" \
            "the log's checksum $(echo "$floor" | field checksum); write() into a file $(echo "$floor" | field write)"
    else
        echo "The floor of a log's side: failed: $floor"
    fi
fi

echo
echo "POSIX_TRACE_LOOP: the same burst into a 1 MiB LOOP stream, read after the stop;"
echo "it must end with the newest event (the last of its thread): runs that did, of $runs"
echo
printf "| %-44s | %9s | %-27s | %-6s |\n" "case" "ns/event" "kept" "newest"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..46})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..29})" "--------"
for threads in 1 2; do
    costs=() kept=() newest=0
    for _ in $(seq "$runs"); do
        line=$("$bin" loop "$threads" "$events" 2>&1 | tail -n 1)
        costs+=("$(echo "$line" | field ns_per_event)")
        kept+=("$(echo "$line" | field kept)")
        ended=$(echo "$line" | field newest)
        newest=$((newest + ${ended:-0})) # a failed run did not
    done
    printf "| %-44s | %9.1f | %12d – %12d | %s of %s |\n" \
        "posixtrace, 1 MiB LOOP stream, $threads thread(s)" \
        "$(printf '%s\n' "${costs[@]}" | median)" \
        "$(printf '%s\n' "${kept[@]}" | sort -n | head -1)" \
        "$(printf '%s\n' "${kept[@]}" | sort -n | tail -1)" "$newest" "$runs"
done

echo
echo "Reading: one thread emits the burst into a 512 MiB UNTIL_FULL stream while the"
echo "main thread reads it with posix_trace_getnext_event; then the same burst is read"
echo "from the stopped stream; and the log of a FLUSH stream given the burst by one"
echo "thread (runs of the lanes' chunks, put in order as it is read), read back from"
echo "posix_trace_open to its last event (million events a second: median, least –"
echo "most of $runs runs)"
echo
printf "| %-40s | %8s | %-17s | %-17s |\n" "case" "median" "range" "kept"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..42})" "----------" "-------------------" "-------------------"
reads=() stopped=() kept=() stopped_kept=()
for _ in $(seq "$runs"); do
    line=$("$bin" read 1 "$events" 2>&1 | tail -n 1)
    reads+=("$(echo "$line" | field read_per_s)")
    stopped+=("$(echo "$line" | field stopped_read_per_s)")
    kept+=("$(echo "$line" | field kept)")
    stopped_kept+=("$(echo "$line" | field stopped_kept)")
done
log_reads=() log_kept=()
for _ in $(seq "$runs"); do
    line=$("$bin" log 1 "$events" "$log/read.log" 2>&1 | tail -n 1)
    log_reads+=("$(echo "$line" | field log_read_per_s)")
    log_kept+=("$(echo "$line" | field kept)")
done
least() { printf '%s\n' "$@" | sort -n | head -1; }
read_row() { # label, least kept, values...
    local label=$1 kept_least=$2; shift 2
    local sorted
    sorted=$(printf '%s\n' "$@" | sort -g)
    printf "| %-40s | %8.1f | %7.1f – %7.1f | %s of %s |\n" "$label" \
        "$(echo "$sorted" | median | awk '{print $1 / 1e6}')" \
        "$(echo "$sorted" | head -1 | awk '{print $1 / 1e6}')" \
        "$(echo "$sorted" | tail -1 | awk '{print $1 / 1e6}')" \
        "$kept_least" "$events"
}
read_row "getnext while the burst is emitted" "$(least "${kept[@]}")" "${reads[@]}"
read_row "getnext from the stopped stream" "$(least "${stopped_kept[@]}")" "${stopped[@]}"
read_row "getnext from the log, after the shutdown" "$(least "${log_kept[@]}")" "${log_reads[@]}"

echo
echo "A stream's life, 20 cycles of create / start / one event / stop / read /"
echo "shutdown after the process's first (milliseconds: median, largest; the stop"
echo "and the read are not timed): streams of the process, its user events through"
echo "the lanes, then through the uprobe (POSIXTRACE_USER_EVENTS=kernel), then"
echo "streams of two child processes in turn, traced by pid (each one's probes"
echo "retired at its shutdown, the next attaching its own)."
echo
lanes=$("$bin" life 20)
uprobe=$(POSIXTRACE_USER_EVENTS=kernel "$bin" life 20)
by_pid=$("$bin" life-pid 20)
printf "| %-15s | %8s | %8s | %8s | %8s | %8s | %8s |\n" "step" "lanes" "largest" \
    "uprobe" "largest" "by pid" "largest"
printf "|%s|%s|%s|%s|%s|%s|%s|\n" "-----------------" "----------" "----------" "----------" \
    "----------" "----------" "----------"
for step in create start shutdown; do
    printf "| %-15s |" "$step"
    for run in "$lanes" "$uprobe" "$by_pid"; do
        printf " %8.2f | %8.2f |" "$(echo "$run" | field "${step}_ms")" \
            "$(echo "$run" | field "${step}_max_ms")"
    done
    echo
done
for step in create shutdown; do
    printf "| %-15s |" "first $step"
    for run in "$lanes" "$uprobe" "$by_pid"; do
        printf " %8.2f | %8s |" "$(echo "$run" | field "first_${step}_ms")" ""
    done
    echo
done
echo
for run in lanes uprobe by_pid; do
    printf "Events read back, %s: %s of %s\n" "$run" "$(echo "${!run}" | field kept)" \
        "$(echo "${!run}" | field of)"
done

