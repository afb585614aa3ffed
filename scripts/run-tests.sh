#!/usr/bin/env bash
# Runs the Catch2 suite and ends with the line "N passed, N failed"
# (test cases). Exit status is the suite's.
#
# Without a test spec it runs twice: everything, then the tests of streams
# that trace their own process again with POSIXTRACE_USER_EVENTS=kernel, so
# that user events take the uprobe path as well as the lanes (the default).
set -uo pipefail
binary=$1; shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
total_passed=0 total_failed=0 status=0 failures=""

# The tests of streams of the calling process carry the tag [self-tracing]:
# every test case of a file that creates one by name must (files that do it
# through their own helpers are tagged by hand).
sources=$(dirname "$0")/../tests
for file in $(grep -lE 'posix_trace_create(_withlog)?\((0|getpid\(\))|(make|make_logged|started)_stream\(' \
        "$sources"/*.cpp); do
    cases=$(grep -c 'TEST_CASE(' "$file")
    tagged=$(grep -c '\[self-tracing\]' "$file")
    if [ "$cases" -ne "$tagged" ]; then
        echo "run-tests.sh: $(basename "$file"): $cases test cases, $tagged tagged [self-tracing]"
        echo "0 passed, 1 failed"
        exit 1
    fi
done

run_pass() {
    "$@" 2>&1 | tee "$log"
    local pass_status=${PIPESTATUS[0]} passed failed
    local summary
    summary=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -n 1)
    if [[ $summary =~ All\ tests\ passed.*in\ ([0-9]+)\ test\ case ]]; then
        passed=${BASH_REMATCH[1]}; failed=0
    elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ passed\ *\|\ *([0-9]+)\ failed ]]; then
        passed=${BASH_REMATCH[2]}; failed=${BASH_REMATCH[3]}
    elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ failed ]]; then
        passed=0; failed=${BASH_REMATCH[2]}
    else
        passed=0; failed=1
        [ "$pass_status" -eq 0 ] && pass_status=1
    fi
    failures+=$(awk '
        /^-+$/ && length($0) == 79 { header = !header; if (header) name = ""; next }
        header && name == "" { name = $0; next }
        /FAILED:$/ { print "  " name ": " $0 }' "$log")$'\n'
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    [ "$pass_status" -ne 0 ] && status=$pass_status
}

if [ $# -gt 0 ]; then
    run_pass "$binary" --durations no "$@"
else
    run_pass "$binary" --durations no
    echo "== again, user events through the uprobe (POSIXTRACE_USER_EVENTS=kernel)"
    run_pass env POSIXTRACE_USER_EVENTS=kernel "$binary" --durations no "[self-tracing]"
fi
# The failing cases again, last, where a reader of the output's tail sees them.
if [ "$total_failed" -ne 0 ] && [ -n "${failures//$'\n'/}" ]; then
    echo "failed:"
    printf '%s' "$failures" | grep -v '^$'
fi
echo "$total_passed passed, $total_failed failed"
exit "$status"
