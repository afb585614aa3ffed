#!/usr/bin/env bash
# Regenerates the seed corpus of log_reader_fuzzer, fuzz/corpus/log_reader/:
# small real trace logs, written by real streams (root: BPF).
#   append.ptl, until_full.ptl, loop.ptl  fuzz/corpus_writer.c: one per log
#        full policy, stream policy POSIX_TRACE_FLUSH, several blocks
#   record.ptl        `posixtrace record -o` of /bin/true (system, TD events)
#   append-killed.ptl append.ptl without trailer and footer (a writer killed
#                     after its last block)
#   append-torn.ptl   append.ptl cut inside its last block
# Usage: fuzz/make_corpus.sh   (SKIP_BUILD=1: use build/ as it is)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
    echo "make_corpus.sh: needs root (the streams load BPF programs)" >&2
    exit 1
fi
scripts/mount-tracefs.sh
[ -n "${SKIP_BUILD:-}" ] || make -j"$(nproc)" --no-print-directory all

out=fuzz/corpus/log_reader
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cc -O2 -g -std=gnu11 -Wall -Wextra -Iinclude -o "$tmp/corpus_writer" fuzz/corpus_writer.c \
    -Lbuild/lib -lposixtrace -Wl,-rpath,"$PWD/build/lib"
mkdir "$tmp/logs"
"$tmp/corpus_writer" "$tmp/logs"
build/bin/posixtrace record -o "$tmp/logs/record.ptl" -- /bin/true >/dev/null

# The footer (the last 24 bytes) holds the trailer's offset at byte 8.
append="$tmp/logs/append.ptl"
trailer=$(tail -c 24 "$append" | od -An -t u8 -j 8 -N 8 | tr -d ' ')
head -c "$trailer" "$append" >"$tmp/logs/append-killed.ptl"
head -c "$((trailer - 100))" "$append" >"$tmp/logs/append-torn.ptl"

rm -rf "$out"
mkdir -p "$out"
cp "$tmp"/logs/*.ptl "$out/"
ls -l "$out"
du -cb "$out"/* | tail -1
