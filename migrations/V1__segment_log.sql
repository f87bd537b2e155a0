-- Regent's storage model: a log of segments per partition, one cursor per (partition, group).
-- No foreign keys on the hot tables: a foreign-key check on every append or ack would take
-- a share lock on the parent row and cost a lookup; deleting a queue removes its rows explicitly.

CREATE TABLE queues (
    id          uuid PRIMARY KEY,
    tenant      text NOT NULL,
    name        text NOT NULL,
    namespace   text NOT NULL DEFAULT '',
    task        text NOT NULL DEFAULT '',
    -- The options exactly as configured (absent keys mean "default"), so the dead-letter
    -- flags keep their third state, "never set".
    options     jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, name)
);

-- One row per partition; it doubles as the partition's sequencer: offsets are allocated
-- under this row's lock inside the pushing transaction, so commit order equals offset order.
CREATE TABLE partitions (
    id            uuid PRIMARY KEY,
    tenant        text NOT NULL,
    queue_id      uuid NOT NULL,
    name          text NOT NULL,
    next_offset   bigint NOT NULL DEFAULT 0,
    last_push_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
) WITH (fillfactor = 70);

-- One row per appended batch of one partition. `frames` holds the messages in offset order
-- (frame k has offset base_offset + k) in the broker's binary framing (src/store/frames.rs):
-- PostgreSQL stores and returns the bytes, it never parses them.
CREATE TABLE segments (
    partition_id  uuid NOT NULL,
    end_offset    bigint NOT NULL,
    base_offset   bigint NOT NULL,
    created_at    timestamptz NOT NULL,
    frames        bytea NOT NULL,
    PRIMARY KEY (partition_id, end_offset)
);
-- lz4 compresses TOASTed segments at a fraction of pglz's CPU; servers built without it keep
-- the default.
DO $$ BEGIN
    ALTER TABLE segments ALTER COLUMN frames SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN NULL;
END $$;

-- transactionId -> offset, per partition: push deduplication and ack resolution. Purged on
-- its own clock (the seed's "hash purged"); it is not the message's lifetime.
CREATE TABLE tx_index (
    partition_id    uuid NOT NULL,
    transaction_id  text NOT NULL,
    "offset"        bigint NOT NULL,
    message_id      uuid NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (partition_id, transaction_id)
);
CREATE INDEX tx_index_created_at ON tx_index USING brin (created_at);

-- One row per (partition, consumer group): the committed offset (every offset at or below it
-- is done; -1 = nothing), the lease and the retry counter. No per-message state anywhere.
-- lease_expires_at is kept after a release: it orders partitions least-recently-claimed first.
CREATE TABLE cursors (
    partition_id      uuid NOT NULL,
    consumer_group    text NOT NULL,
    committed         bigint NOT NULL,
    lease_id          uuid,
    lease_expires_at  timestamptz,
    lease_end         bigint,
    retry_count       integer NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, consumer_group)
) WITH (fillfactor = 70);
CREATE INDEX cursors_lease ON cursors (lease_id) WHERE lease_id IS NOT NULL;

-- Where a named group starts on partitions it has never read: decided on first join, sticky.
-- start_after NULL = from the first message.
CREATE TABLE subscriptions (
    queue_id        uuid NOT NULL,
    consumer_group  text NOT NULL,
    start_after     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_id, consumer_group)
);

-- A snapshot of each dead-lettered message, so entries outlive the log's retention.
CREATE TABLE dead_letters (
    id              bigserial PRIMARY KEY,
    tenant          text NOT NULL,
    queue_id        uuid NOT NULL,
    partition_id    uuid NOT NULL,
    consumer_group  text NOT NULL,
    "offset"        bigint NOT NULL,
    message_id      uuid NOT NULL,
    transaction_id  text NOT NULL,
    frame           bytea NOT NULL,
    created_at      timestamptz NOT NULL,
    error           text NOT NULL,
    retry_count     integer NOT NULL,
    failed_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_queue ON dead_letters (tenant, queue_id, failed_at DESC);

-- regent_append is defined in crates/store/sql/functions.sql, applied at every start.
