-- The transaction index is keyed by a 128-bit hash instead of (partition, text id).
--
-- The broker computes the hash from the partition id and the transaction id
-- (src/store/tx_hash.rs), so one key names one id in one partition and the index needs no
-- partition column: a row is (hash, offset, created_at), 60 bytes of heap and 28 of b-tree,
-- where the old row (partition, text id, offset, message id, created_at) took about 150.
-- The message id of a duplicate is read from its frame instead (a rare path).
--
-- A GIN index over one hash array per segment was tried first and measured: fewer bytes,
-- but a lookup of 100 keys cost milliseconds where the b-tree's ON CONFLICT costs a fraction
-- of one (BENCHMARKS.md, "The transaction index").
DROP FUNCTION regent_append(uuid, text[], uuid[], bytea[]);
DROP TABLE tx_index;

CREATE TABLE tx_index (
    hash        uuid PRIMARY KEY,
    "offset"    bigint NOT NULL,
    created_at  timestamptz NOT NULL
);
-- The purge clock deletes by age; rows arrive in created_at order.
CREATE INDEX tx_index_created_at ON tx_index USING brin (created_at);
ALTER TABLE tx_index SET (autovacuum_vacuum_insert_scale_factor = 0.05);

-- Append one batch to a partition: lock the sequencer row, index the hashes, write one
-- segment, advance next_offset. One round trip. p_frames holds one encoded frame per item,
-- aligned with p_hashes. Returns one row per item that was NOT appended (1-based position,
-- the offset of the message already stored under that hash); every other item was appended,
-- in order, from the partition's old next_offset.
--
-- Duplicates are rare. A careful call (p_careful) looks every hash up first (one b-tree scan)
-- and appends without the ones it finds. An optimistic call skips the lookup and lets the
-- primary key find a duplicate: the insert then fails with unique_violation, voiding the
-- caller's transaction, which the broker re-runs carefully (src/store/push.rs). Skipping the
-- lookup saves about a third of the call. INSERT ... ON CONFLICT DO NOTHING would need no
-- second run, but pays a speculative insertion per row (measured about a fifth slower than
-- lookup plus insert). Neither can race a concurrent insert of the same hash: the hash names
-- this partition, whose sequencer row this call holds locked. seq scans are off so the lookup
-- is never planned as one (a plan cached while the table was empty would otherwise scan it
-- whole on every call).
CREATE FUNCTION regent_append(p_partition uuid, p_hashes uuid[], p_frames bytea[],
                              p_careful boolean)
RETURNS TABLE (item integer, stored_offset bigint)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_next    bigint;
    v_n       integer := cardinality(p_hashes);
    v_dups    integer[];
    v_count   integer;
    v_now     timestamptz;
    v_fresh   boolean := true;
BEGIN
    SELECT p.next_offset INTO v_next FROM partitions p WHERE p.id = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % does not exist', p_partition USING ERRCODE = 'P0002';
    END IF;
    -- Taken after the lock, so created_at grows with the offset within a partition.
    v_now := clock_timestamp();

    IF p_careful THEN
        v_fresh := NOT EXISTS (SELECT 1 FROM tx_index x WHERE x.hash = ANY (p_hashes));
    END IF;
    IF v_fresh THEN
        INSERT INTO tx_index (hash, "offset", created_at)
        SELECT a.hash, v_next + a.ord - 1, v_now
          FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord);
        INSERT INTO segments (partition_id, end_offset, base_offset, created_at, frames)
        VALUES (p_partition, v_next + v_n - 1, v_next, v_now,
                (SELECT string_agg(f, ''::bytea ORDER BY ord)
                   FROM unnest(p_frames) WITH ORDINALITY AS e(f, ord)));
        UPDATE partitions SET next_offset = v_next + v_n, last_push_at = v_now
         WHERE id = p_partition;
        RETURN;
    END IF;

    SELECT coalesce(array_agg(a.ord::integer), '{}') INTO v_dups
      FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord)
      JOIN tx_index x ON x.hash = a.hash;

    RETURN QUERY
      SELECT a.ord::integer, x."offset"
        FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord)
        JOIN tx_index x ON x.hash = a.hash;

    v_count := v_n - cardinality(v_dups);
    IF v_count = 0 THEN
        RETURN;
    END IF;

    INSERT INTO segments (partition_id, end_offset, base_offset, created_at, frames)
    VALUES (p_partition, v_next + v_count - 1, v_next, v_now,
            (SELECT string_agg(e.f, ''::bytea ORDER BY e.ord)
               FROM unnest(p_frames) WITH ORDINALITY AS e(f, ord)
              WHERE NOT (e.ord::integer = ANY (v_dups))));

    INSERT INTO tx_index (hash, "offset", created_at)
    SELECT f.hash, v_next + f.rn - 1, v_now
      FROM (SELECT a.hash, row_number() OVER (ORDER BY a.ord) AS rn
              FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord)
             WHERE NOT (a.ord::integer = ANY (v_dups))) f;

    UPDATE partitions SET next_offset = v_next + v_count, last_push_at = v_now
     WHERE id = p_partition;
END
$$;
