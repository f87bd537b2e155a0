-- Queen Streams (`/streams/v1/*`): registered queries, their per-partition state, and each
-- (query, source partition)'s last cycle, which makes a retried cycle a replay instead of a
-- second application (docs/design/streams.md).

-- A query, registered by name within its tenant. Small and read by every cycle: a reference
-- table on Citus.
CREATE TABLE stream_queries (
    id            uuid PRIMARY KEY,
    tenant        text NOT NULL,
    name          text NOT NULL,
    source_queue  text NOT NULL,
    sink_queue    text,
    config_hash   text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, name)
);

-- One row per (source partition, query): the lock a cycle takes first, the digest and answer
-- of the last committed cycle, and counters for the console. Keyed by partition first so it
-- is co-located with the partition on Citus.
CREATE TABLE stream_partitions (
    partition_id   uuid NOT NULL,
    query_id       uuid NOT NULL,
    last_digest    uuid,
    last_answer    bytea,
    last_cycle_at  timestamptz,
    cycles         bigint NOT NULL DEFAULT 0,
    state_ops      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, query_id)
);
CREATE INDEX stream_partitions_by_query ON stream_partitions (query_id);

-- A query's state rows per source partition: the value as the client's JSON text, and its
-- `windowEnd` (epoch ms) when it has one, for `ripe_at_or_before`.
CREATE TABLE stream_state (
    partition_id  uuid NOT NULL,
    query_id      uuid NOT NULL,
    key           text NOT NULL,
    value         text NOT NULL,
    window_end    double precision,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, query_id, key)
);
CREATE INDEX stream_state_by_query ON stream_state (query_id);

-- regent_stream_state is defined in crates/store/sql/functions.sql, applied at every start.
