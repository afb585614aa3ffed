-- The tables `posixtrace push` fills in ClickHouse, one row an event and
-- one row a stream. Column names are the keys of `posixtrace export
-- --format jsonl` (the payload is kept as its bytes, `data`; `data_hex`
-- is computed from them when read). The types are those ClickHouse has accepted since 18.16
-- (Debian 12's server) and still accepts: no DateTime64, LowCardinality or
-- Map. `posixtrace push` creates them when they are missing; to create them
-- by hand: clickhouse-client --multiquery < clickhouse.sql
--
-- A push may repeat rows (a batch sent again after a timeout whose insert
-- had gone through): ReplacingMergeTree keeps one row a key once it merges
-- parts, and queries that count read with FINAL (docs/fleet.md).

CREATE DATABASE IF NOT EXISTS posixtrace;

CREATE TABLE IF NOT EXISTS posixtrace.events
(
    `host.name` String,
    `host.boot_id` UUID,
    `stream.id` UUID,
    `stream.name` String,
    sequence UInt64,                -- the event's place in its log, from 0
    time_unix_nano UInt64,          -- CLOCK_REALTIME
    time_monotonic_ns Int64,        -- CLOCK_MONOTONIC, on its host since its boot
    `process.pid` Int32,
    `thread.id` Int32,              -- 0: an event of the trace system itself
    `thread.name` String,           -- as the thread's latest thread event named it
    `event.name` String,
    `event.class` String,           -- user, usdt, td or system
    `event.id` UInt32,
    data String,                    -- the payload's bytes
    data_hex String ALIAS lower(hex(data)),
    truncated String,               -- none, record or read
    lost_before UInt64,             -- lost, as the overflow events before it report
    fields String,                  -- a JSON object of the fields decoded from the data
    time DateTime MATERIALIZED toDateTime(intDiv(time_unix_nano, 1000000000)),
    -- Added after the first release: push adds them to a table made before.
    `process.vpid` Int32 DEFAULT 0, -- in the process's own PID namespace; 0: the host's
    `thread.vtid` Int32 DEFAULT 0   -- the thread, in that namespace; 0: the host's
)
-- No partition key: the stamps come from the logs, which a traced host
-- controls, and a key of them would let one log make a partition a month.
ENGINE = ReplacingMergeTree
ORDER BY (`host.name`, `process.pid`, time_unix_nano, `stream.id`, sequence);

CREATE TABLE IF NOT EXISTS posixtrace.streams
(
    `stream.id` UUID,
    `stream.name` String,
    `host.name` String,
    `host.boot_id` UUID,
    created_unix_nano UInt64,       -- posix_trace_create, CLOCK_REALTIME
    realtime_offset_ns Int64,       -- CLOCK_REALTIME - CLOCK_MONOTONIC of the stream
    events UInt64,                  -- in the log, every one pushed
    first_unix_nano UInt64,
    last_unix_nano UInt64,
    overflow_events UInt64,
    lost UInt64,                    -- what its overflow events report lost, in all
    lost_in_kernel UInt64,
    lost_in_stream UInt64,
    pushed_unix_nano UInt64         -- the latest push wins
)
ENGINE = ReplacingMergeTree(pushed_unix_nano)
ORDER BY (`host.name`, `stream.id`);

-- JSON rows of `posixtrace export --format jsonl` go in here, as
-- JSONEachRow (the `fields` object as text: 18.16 reads no object into a
-- String): a table that keeps nothing, whose view stores each row into
-- posixtrace.events, the payload as its bytes (and `time` as the table
-- computes it: Debian's server asks a view for a materialized column too).
CREATE TABLE IF NOT EXISTS posixtrace.events_jsonl
(
    `host.name` String,
    `host.boot_id` UUID,
    `stream.id` UUID,
    `stream.name` String,
    sequence UInt64,
    time_unix_nano UInt64,
    time_monotonic_ns Int64,
    `process.pid` Int32,
    `thread.id` Int32,
    `thread.name` String,
    `event.name` String,
    `event.class` String,
    `event.id` UInt32,
    data_hex String,
    truncated String,
    lost_before UInt64,
    fields String,
    `process.vpid` Int32 DEFAULT 0,
    `thread.vtid` Int32 DEFAULT 0
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS posixtrace.events_from_jsonl TO posixtrace.events
AS SELECT `host.name`, `host.boot_id`, `stream.id`, `stream.name`, sequence, time_unix_nano,
    time_monotonic_ns, `process.pid`, `thread.id`, `thread.name`, `event.name`, `event.class`,
    `event.id`, unhex(data_hex) AS data, truncated, lost_before, fields, `process.vpid`,
    `thread.vtid`, toDateTime(intDiv(time_unix_nano, 1000000000)) AS time
FROM posixtrace.events_jsonl;
