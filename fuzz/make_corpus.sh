#!/usr/bin/env bash
# Regenerates the seed corpora of the fuzzers. fuzz/corpus/log_reader/:
# small real trace logs, written by real streams (root: BPF).
#   append.ptl, until_full.ptl, loop.ptl  fuzz/corpus_writer.c: one per log
#        full policy, stream policy POSIX_TRACE_FLUSH, several blocks
#        (append.ptl is of version 2, the two others too small for runs)
#   runs.ptl          corpus_writer.c: version 2, blocks that overlap (runs)
#   record.ptl        `posixtrace record -o` of /bin/true (system, TD events)
#   namespaced.ptl    `posixtrace record --inherit` of a shell in a PID
#                     namespace of its own: events with namespace ids records
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
build/bin/posixtrace record --inherit --events td:create,td:death,system \
    -o "$tmp/logs/namespaced.ptl" -- unshare --pid --fork sh -c '/bin/true; /bin/true' >/dev/null
major=$(od -An -t u2 -j 8 -N 2 "$tmp/logs/runs.ptl" | tr -d ' ')
[ "$major" = 2 ] || { echo "make_corpus.sh: runs.ptl is of version $major, not 2" >&2; exit 1; }

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

# The seeds of usdt_notes_fuzzer, fuzz/corpus/usdt_notes/: fuzz/notes_seed.c
# (two USDT probes, one with semaphores, and a symbol named like the user
# event table) as a small shared library and a small PIE executable (with
# PT_INTERP), without debug sections.
notes=fuzz/corpus/usdt_notes
mkdir -p "$notes"
small="-O2 -nostdlib -Wl,-z,max-page-size=0x10 -Wl,-z,norelro -Wl,--build-id=none -Wl,--hash-style=gnu"
cc $small -fPIC -shared -o "$notes/library.so" fuzz/notes_seed.c
cc $small -fPIE -pie -Wl,-e,seed -Wl,--dynamic-linker=/lib64/ld-linux-x86-64.so.2 \
    -o "$notes/executable" fuzz/notes_seed.c
strip --strip-debug "$notes/library.so" "$notes/executable"
ls -l "$notes"

# And a small /etc/ld.so.cache (the same bytes go to the cache's parser): two
# x86-64 libraries, the new format, with its header and string table.
python3 - "$notes/ld.so.cache" <<'PY'
import struct, sys
names = [(b"libfoo.so.1", b"/usr/lib/x86_64-linux-gnu/libfoo.so.1"),
         (b"libbar.so.2", b"/lib/libbar.so.2")]
header, entry = 48, 24
strings, offsets = b"", []
base = header + entry * len(names)
for soname, path in names:
    offsets.append((base + len(strings), base + len(strings) + len(soname) + 1))
    strings += soname + b"\0" + path + b"\0"
out = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", len(names), len(strings), 2, 0)
for key, value in offsets:
    out += struct.pack("<iIIIQ", 0x0303, key, value, 0, 0)
open(sys.argv[1], "wb").write(out + strings)
PY
