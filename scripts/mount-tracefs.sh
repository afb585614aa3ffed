#!/usr/bin/env bash
# Mounts tracefs (and debugfs's tracing alias) when it is not mounted yet.
set -euo pipefail
if ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
        echo "posixtrace: could not mount tracefs (not root?)" >&2
fi
