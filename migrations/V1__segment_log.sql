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

-- Append one batch to a partition: lock the sequencer row, index the transaction ids, write
-- one segment, advance next_offset. One round trip. p_frames holds one encoded frame per
-- item, aligned with p_txids and p_ids; the segment is their concatenation. Returns one row
-- per item that was NOT appended (1-based position, the id of the message already stored);
-- every other item was appended with its own id.
--
-- Duplicates are rare, so the common case is one pass: index every id at the offsets it
-- would get, skipping conflicts; if nothing conflicted the batch is appended whole. Only when
-- something did are those index rows taken back and the batch appended without its
-- duplicates (the sequencer lock guarantees every index row at or past v_next is ours).
CREATE FUNCTION regent_append(p_partition uuid, p_txids text[], p_ids uuid[], p_frames bytea[])
RETURNS TABLE (item integer, message_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
    v_next    bigint;
    v_n       integer := cardinality(p_txids);
    v_indexed integer;
    v_dups    integer[];
    v_count   integer;
    v_now     timestamptz;
BEGIN
    SELECT p.next_offset INTO v_next FROM partitions p WHERE p.id = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % does not exist', p_partition USING ERRCODE = 'P0002';
    END IF;
    -- Taken after the lock, so created_at grows with the offset within a partition.
    v_now := clock_timestamp();

    INSERT INTO tx_index (partition_id, transaction_id, "offset", message_id, created_at)
    SELECT p_partition, a.txid, v_next + a.ord - 1, p_ids[a.ord], v_now
      FROM unnest(p_txids) WITH ORDINALITY AS a(txid, ord)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_indexed = ROW_COUNT;

    IF v_indexed = v_n THEN
        INSERT INTO segments (partition_id, end_offset, base_offset, created_at, frames)
        VALUES (p_partition, v_next + v_n - 1, v_next, v_now,
                (SELECT string_agg(f, ''::bytea ORDER BY ord)
                   FROM unnest(p_frames) WITH ORDINALITY AS e(f, ord)));
        UPDATE partitions SET next_offset = v_next + v_n, last_push_at = v_now
         WHERE id = p_partition;
        RETURN;
    END IF;

    DELETE FROM tx_index x WHERE x.partition_id = p_partition AND x."offset" >= v_next;

    SELECT coalesce(array_agg(a.ord::integer), '{}') INTO v_dups
      FROM unnest(p_txids) WITH ORDINALITY AS a(txid, ord)
      JOIN tx_index x ON x.partition_id = p_partition AND x.transaction_id = a.txid;

    RETURN QUERY
      SELECT a.ord::integer, x.message_id
        FROM unnest(p_txids) WITH ORDINALITY AS a(txid, ord)
        JOIN tx_index x ON x.partition_id = p_partition AND x.transaction_id = a.txid;

    v_count := v_n - cardinality(v_dups);
    IF v_count = 0 THEN
        RETURN;
    END IF;

    INSERT INTO segments (partition_id, end_offset, base_offset, created_at, frames)
    VALUES (p_partition, v_next + v_count - 1, v_next, v_now,
            (SELECT string_agg(e.f, ''::bytea ORDER BY e.ord)
               FROM unnest(p_frames) WITH ORDINALITY AS e(f, ord)
              WHERE NOT (e.ord::integer = ANY (v_dups))));

    INSERT INTO tx_index (partition_id, transaction_id, "offset", message_id, created_at)
    SELECT p_partition, f.txid, v_next + f.rn - 1, p_ids[f.ord], v_now
      FROM (SELECT a.txid, a.ord, row_number() OVER (ORDER BY a.ord) AS rn
              FROM unnest(p_txids) WITH ORDINALITY AS a(txid, ord)
             WHERE NOT (a.ord::integer = ANY (v_dups))) f;

    UPDATE partitions SET next_offset = v_next + v_count, last_push_at = v_now
     WHERE id = p_partition;
END
$$;
