#!/usr/bin/env bash
# Runs the Catch2 suite and ends with the line "N passed, N failed"
# (test cases). Exit status is the suite's.
set -uo pipefail
binary=$1; shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$binary" --durations no "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -n 1)
if [[ $summary =~ All\ tests\ passed.*in\ ([0-9]+)\ test\ case ]]; then
    passed=${BASH_REMATCH[1]}; failed=0
elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ passed\ *\|\ *([0-9]+)\ failed ]]; then
    passed=${BASH_REMATCH[2]}; failed=${BASH_REMATCH[3]}
elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ failed ]]; then
    passed=0; failed=${BASH_REMATCH[2]}
else
    passed=0; failed=1
    [ "$status" -eq 0 ] && status=1
fi
echo "$passed passed, $failed failed"
exit "$status"
