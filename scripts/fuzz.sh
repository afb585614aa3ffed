#!/usr/bin/env bash
# Fuzzes the trace log reader for SECONDS (default 60): builds
# build-fuzz/log_reader_fuzzer (`make fuzz`) and runs it, one job, on a copy
# of the seed corpus fuzz/corpus/log_reader/ in a temporary directory (the
# repository is not modified). Exits non-zero on a crash, an invariant
# violation, a leak or a hang (> 10 s on one input); the input that did it is
# kept in FUZZ_ARTIFACTS (default build-fuzz/artifacts/) and the log of the
# run is printed. Minimise a reproducer with
#   build-fuzz/log_reader_fuzzer -minimize_crash=1 -runs=100000 FILE
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
case $seconds in
'' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;;
esac

make -j"$(nproc)" --no-print-directory fuzz

artifacts=${FUZZ_ARTIFACTS:-build-fuzz/artifacts}
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp fuzz/corpus/log_reader/* "$work/corpus/"

echo "== fuzzing the log reader for ${seconds} s (build-fuzz/log_reader_fuzzer)"
status=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    build-fuzz/log_reader_fuzzer "$work/corpus" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -dict=fuzz/log_reader.dict -print_final_stats=1 \
    -artifact_prefix="$artifacts/" >"$work/fuzz.log" 2>&1 || status=$?

# Without the lines about each new input and the recommended dictionary:
# the whole log after a failure, its end otherwise.
sed '/^###### Recommended dictionary/,/^###### End of recommended dictionary/d' "$work/fuzz.log" |
    grep -Ev '^(#[0-9]+[[:space:]]+(NEW|REDUCE)|[[:space:]]+NEW_FUNC)' >"$work/summary.log" || true
if [ "$status" -ne 0 ]; then
    cat "$work/summary.log"
    echo "fuzz.sh: the fuzzer failed (exit $status); reproducer(s) in $artifacts/:" >&2
    ls -l "$artifacts" >&2
    exit 1
fi
tail -n 25 "$work/summary.log"
echo "fuzz.sh: no crash, leak or hang in ${seconds} s"
