#!/usr/bin/env bash
# Runs the whole test suite N times in a row from a fresh build, one line per
# run with the tests that failed, then a total. A test that fails once is a
# bug to find: this is how to see it.
#   scripts/repeat-tests.sh N [BUILD_DIR]     (default build dir: build-repeat)
set -uo pipefail
runs=${1:?usage: scripts/repeat-tests.sh N [BUILD_DIR]}
build=${2:-build-repeat}
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/mount-tracefs.sh
rm -rf "$build"
make -j"$(nproc)" BUILD="$build" all >/dev/null || { echo "build failed"; exit 1; }
failed_runs=0
for ((i = 1; i <= runs; i++)); do
    log=$(mktemp)
    start=$(date +%s)
    scripts/run-tests.sh "$build/tests/posixtrace-tests" >"$log" 2>&1
    status=$?
    summary=$(tail -n 1 "$log")
    # Catch2 prints a failing test's name between two rules, then FAILED.
    failures=$(awk '/^-------+$/ { rule = !rule; next } rule { name = $0 }
                    /: FAILED:$/ && !seen[name]++ { printf "%s; ", name }' "$log")
    echo "run $i: $summary, $(( $(date +%s) - start )) s${failures:+ -- failed: $failures}"
    if [ "$status" -ne 0 ]; then
        failed_runs=$((failed_runs + 1))
        cp "$log" "/tmp/posixtrace-repeat-run-$i.log"
        echo "  (log kept in /tmp/posixtrace-repeat-run-$i.log)"
    fi
    rm -f "$log"
done
echo "$runs runs, $failed_runs failed"
[ "$failed_runs" -eq 0 ]
