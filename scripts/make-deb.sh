#!/usr/bin/env bash
# Builds the Debian package of what `make install` installs, with /usr as
# its prefix: build/posixtrace_VERSION_ARCH.deb. Its dependencies are the
# packages of the shared libraries the library and the CLI link
# (dpkg-shlibdeps). Usage: scripts/make-deb.sh BUILD_DIR VERSION SOVERSION
set -euo pipefail
build=$1 version=$2 soversion=$3
arch=$(dpkg --print-architecture)
stage=$(cd "$build" && pwd)/deb
rm -rf "$stage"
mkdir -p "$stage/root/DEBIAN" "$stage/debian"
make --no-print-directory install BUILD="$build" PREFIX="$stage/root/usr" PC_PREFIX=/usr >/dev/null
# As Debian ships them: no debugging sections (a fifth of the size).
strip --strip-debug "$stage/root/usr/bin/posixtrace" "$stage/root/usr/lib/libposixtrace.so."* \
    "$stage/root/usr/lib/libposixtrace.a"

# dpkg-shlibdeps reads the source package's name from debian/control.
printf 'Source: posixtrace\n\nPackage: posixtrace\nArchitecture: any\n' > "$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O -e root/usr/bin/posixtrace \
    -e "root/usr/lib/libposixtrace.so.$soversion" \
    2>"$stage/shlibdeps.err" | sed -n 's/^shlibs:Depends=//p') || true
if [ -z "$depends" ]; then
    echo "make-deb.sh: dpkg-shlibdeps found no dependencies: $(tail -1 "$stage/shlibdeps.err")" >&2
    exit 1
fi

size=$(du -sk "$stage/root/usr" | cut -f1)
cat > "$stage/root/DEBIAN/control" <<CONTROL
Package: posixtrace
Version: $version
Architecture: $arch
Maintainer: posixtrace developers <posixtrace@localhost>
Installed-Size: $size
Depends: $depends
Section: devel
Priority: optional
Description: POSIX Tracing (<trace.h>) for Linux on BPF
 libposixtrace implements the POSIX Tracing option (posix_trace_create,
 posix_trace_event, posix_trace_getnext_event, trace logs, filters) and
 Solaris-style thread events on BPF: USDT probes and scheduler tracepoints
 of a process traced by pid, or user events of a process tracing itself.
 The package holds the library (shared and static), its headers and
 pkg-config file, the posixtrace command (record, dump, export, report,
 threads, push), the man pages and the ClickHouse schema push fills.
CONTROL
# The shared library is found without a path once the linker's cache knows it.
echo "activate-noawait ldconfig" > "$stage/root/DEBIAN/triggers"
out="$build/posixtrace_${version}_${arch}.deb"
fakeroot dpkg-deb --build "$stage/root" "$out" >/dev/null
echo "$out"
