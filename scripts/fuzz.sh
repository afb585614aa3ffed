#!/usr/bin/env bash
# Runs each libFuzzer target of fuzz/ for SECONDS (default 60): builds them
# (`make fuzz`, build-fuzz/) and runs each, one job, as many targets at once
# as there are CPUs, on a copy of its seed corpus fuzz/corpus/TARGET/ (if
# any) in a temporary directory (the repository is not modified). Exits
# non-zero on a crash, an invariant violation, a leak or a hang (> 10 s on
# one input); the input that did it is kept in FUZZ_ARTIFACTS (default
# build-fuzz/artifacts/) and the log of the run is printed. Minimise a
# reproducer with
#   build-fuzz/TARGET_fuzzer -minimize_crash=1 -runs=100000 FILE
# Usage: scripts/fuzz.sh [SECONDS [TARGET...]]   (targets: see the Makefile)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
case $seconds in
'' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS [TARGET...]]" >&2; exit 2 ;;
esac
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(log_reader usdt_notes name_table outputs)

make -j"$(nproc)" --no-print-directory fuzz

artifacts=${FUZZ_ARTIFACTS:-build-fuzz/artifacts}
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs one target in $work/$1/, leaving its exit status and its log there.
fuzz_target() {
    local target=$1 dir=$work/$1 status=0
    local fuzzer=build-fuzz/${target}_fuzzer options=()
    mkdir -p "$dir/corpus"
    if [ -d "fuzz/corpus/$target" ]; then cp "fuzz/corpus/$target"/* "$dir/corpus/"; fi
    if [ -f "fuzz/$target.dict" ]; then options+=(-dict="fuzz/$target.dict"); fi
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
        "$fuzzer" "$dir/corpus" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        "${options[@]}" -print_final_stats=1 \
        -artifact_prefix="$artifacts/$target-" >"$dir/fuzz.log" 2>&1 || status=$?
    echo "$status" >"$dir/status"
}

for target in "${targets[@]}"; do
    [ -x "build-fuzz/${target}_fuzzer" ] || { echo "fuzz.sh: no target $target" >&2; exit 2; }
done

# Each target is one single-threaded job: as many run at once as there are
# CPUs, so each still gets its whole time on a CPU of its own.
parallel=$(nproc)
for target in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
    echo "== fuzzing $target for ${seconds} s (build-fuzz/${target}_fuzzer)"
    fuzz_target "$target" &
done
wait

failed=0
for target in "${targets[@]}"; do
    dir=$work/$target
    status=$(cat "$dir/status")
    # Without the lines about each new input and the recommended dictionary:
    # the whole log after a failure, its end otherwise.
    sed '/^###### Recommended dictionary/,/^###### End of recommended dictionary/d' "$dir/fuzz.log" |
        grep -Ev '^(#[0-9]+[[:space:]]+(NEW|REDUCE)|[[:space:]]+NEW_FUNC)' >"$dir/summary.log" || true
    if [ "$status" -ne 0 ]; then
        cat "$dir/summary.log"
        echo "fuzz.sh: $target failed (exit $status); reproducer(s) in $artifacts/:" >&2
        failed=1
        continue
    fi
    echo "== $target"
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$dir/summary.log" || true
    echo "fuzz.sh: $target: no crash, leak or hang in ${seconds} s"
done
if [ "$failed" -ne 0 ]; then
    ls -l "$artifacts" >&2
    exit 1
fi
