#!/usr/bin/env bash
# Installs the Debian 12 packages posixtrace needs to build and test, when any
# is missing; with --bench, also those only the benchmarks run (the tools
# posixtrace is compared with). Quiet when everything is there.
set -euo pipefail
packages=(clang llvm libbpf-dev bpftool libelf-dev libdeflate-dev zlib1g-dev catch2 libcli11-dev
          systemtap-sdt-dev pkg-config make g++ python3.11 libstdc++6 tmux
          babeltrace2 libclang-rt-14-dev time man-db chromium nlohmann-json3-dev
          libcurl4-openssl-dev clickhouse-server clickhouse-client dpkg-dev fakeroot)
if [ "${1:-}" = --bench ]; then
    packages+=(bpftrace linux-perf lttng-tools liblttng-ust-dev jq)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "posixtrace: missing packages (${missing[*]}) and not root to install them" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The tests start their own ClickHouse server: the package's system service
# is not to start on install (policy-rc.d 101: no service starts).
if [ ! -e /usr/sbin/policy-rc.d ]; then
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
