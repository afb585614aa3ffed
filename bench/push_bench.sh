#!/usr/bin/env bash
# make bench, ClickHouse: a trace log of PUSH_EVENTS events (default
# 2,000,000, 64-byte user events) pushed into a ClickHouse server started
# here (Debian's clickhouse-server, its own data directory, on the same
# CPUs), each run a log of its own into the tables the runs before filled:
# with `posixtrace push`, and as a user would by hand with the jsonl export
# into the schema's events_jsonl (18.16 cannot read a JSON object into a
# String column, so jq turns the fields into text on the way). Events a
# second from the start of the command to its end, and the events stored.
set -uo pipefail
build=${1:-build}
cli=$build/bin/posixtrace
events=${PUSH_EVENTS:-2000000}
source "$(dirname "$0")/common.sh"
dir=$(mktemp -d /var/tmp/posixtrace-push-XXXXXX)
server=
trap '[ -z "$server" ] || { kill "$server"; wait "$server"; }; rm -rf "$dir"' EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_port=$(free_port)
tcp_port=$(free_port)
mkdir -p "$dir/data" "$dir/tmp"
cat >"$dir/config.xml" <<CONFIG
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/error.log</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$http_port</http_port><tcp_port>$tcp_port</tcp_port>
  <path>$dir/data/</path><tmp_path>$dir/tmp/</tmp_path><user_files_path>$dir/files/</user_files_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
</yandex>
CONFIG
cat >"$dir/users.xml" <<USERS
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
USERS
/usr/sbin/clickhouse-server --config-file="$dir/config.xml" >"$dir/server.out" 2>&1 &
server=$!
client() { clickhouse-client --host 127.0.0.1 --port "$tcp_port" "$@"; }
for _ in $(seq 300); do client --query "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
url=http://127.0.0.1:$http_port

schema=$(dirname "$0")/../share/clickhouse.sql
client --multiquery <"$schema"

# Each run pushes a log of its own (a stream of its own) into the tables the
# runs before it filled, as a server of a fleet takes push after push. (Not
# into tables dropped just before: the thousands of files a drop deletes
# make ext4 slow to create the next ones for minutes, which measured the
# file system, not the push.)
timed() { # label, shell command reading $dir/push.log
    local label=$1 command=$2 start end before stored in_log
    "$build/bench/bench_log" fill "$dir/push.log" "$events" >/dev/null
    in_log=$("$cli" dump "$dir/push.log" 2>&1 >/dev/null | grep -oE '[0-9]+ events' | cut -d' ' -f1)
    before=$(client --query "SELECT count() FROM posixtrace.events FINAL")
    start=$(date +%s.%N)
    bash -c "$command" >/dev/null 2>"$dir/err" || { echo "$label failed: $(tail -1 "$dir/err")"; return; }
    end=$(date +%s.%N)
    stored=$(($(client --query "SELECT count() FROM posixtrace.events FINAL") - before))
    printf "| %-58s | %8.2f | %10.0f | %10s of %s |\n" "$label" \
        "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')" \
        "$(awk -v a="$start" -v b="$end" -v n="$in_log" 'BEGIN {print n / (b - a)}')" "$stored" "$in_log"
}
echo "pushing logs of about $events events into ClickHouse $(client --query 'SELECT version()') on this machine"
printf "| %-58s | %8s | %10s | %24s |\n" "how" "seconds" "events/s" "stored"
printf "|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..60})" "$(printf -- '-%.0s' {1..10})" \
    "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..26})"
for run in 1 2; do
    timed "posixtrace push (Native batches of 64 MiB)" "$cli push --clickhouse $url $dir/push.log"
    timed "by hand: export --format jsonl | jq | clickhouse-client" \
        "$cli export $dir/push.log --format jsonl | jq -c '.fields |= tojson' | clickhouse-client --host 127.0.0.1 --port $tcp_port --query 'INSERT INTO posixtrace.events_jsonl FORMAT JSONEachRow'"
done

# record --push at the rate of the thread-event case (bench/thread_switches.sh:
# pingpong's switches and wake-ups), against the same recording to a local
# log alone: what the log keeps, what was lost, and what the server holds.
pingpong=$build/bench/pingpong
trips=${BENCH_ROUND_TRIPS:-500000}
td_events=td:switchto,td:switchfrom,td:sleep,td:ready
recorded() { # label, record's extra arguments
    local label=$1 extra=$2 summary in_log stored before
    before=$(client --query "SELECT count() FROM posixtrace.events FINAL")
    rm -f "$dir/rec.log"
    "$cli" record -o "$dir/rec.log" --events "$td_events" $extra -- "$pingpong" "$trips" "$dir/t" \
        >/dev/null 2>"$dir/err" || { echo "$label failed: $(tail -1 "$dir/err")"; return; }
    summary=$(grep -oE '[0-9]+ events, [0-9]+ lost' "$dir/err" | head -1)
    in_log=$("$cli" dump "$dir/rec.log" 2>&1 >/dev/null | grep -oE '[0-9]+ events' | cut -d' ' -f1)
    stored=$(($(client --query "SELECT count() FROM posixtrace.events FINAL") - before))
    printf "| %-40s | %8s | %-26s | %10s | %10s |\n" "$label" \
        "$(grep -o 'seconds=[0-9.]*' "$dir/t" | cut -d= -f2)" "$summary" "$in_log" "$stored"
}
echo
echo "recording pingpong's thread events ($trips round trips) to a log, and pushed live"
printf "| %-40s | %8s | %-26s | %10s | %10s |\n" "how" "seconds" "recorded" "in the log" "in server"
printf "|%s|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..42})" "$(printf -- '-%.0s' {1..10})" \
    "$(printf -- '-%.0s' {1..28})" "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..12})"
for run in 1 2; do
    recorded "record -o LOG" ""
    recorded "record -o LOG --push URL" "--push $url"
done
