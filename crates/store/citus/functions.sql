-- Regent's functions on Citus (crates/store/src/citus.rs applies this after
-- crates/store/sql/functions.sql, at every start): the body of regent_append that runs there,
-- and where each function runs.
--
-- partition_heads as crates/store/sql/functions.sql defines it reads the newest segment of
-- each partition through a lateral subquery, which Citus does not prune to the partition's
-- shard, and a delegated function must stay on its worker. Here the append keeps writing the
-- head into the `partitions` row (a held horizon's cost on Citus, where each worker has its
-- own), and the view reads it.
CREATE OR REPLACE VIEW partition_heads AS
SELECT p.id, p.tenant, p.queue_id, p.name, p.created_at, p.first_offset, p.next_offset,
       p.last_push_at
  FROM partitions p;

-- regent_append as in crates/store/sql/functions.sql, less the options check of the
-- one-statement push to known partitions (the Citus layout does not use it: its pushes take
-- the full path), but the
-- transaction index carries its partition (the distribution
-- column) and every statement names the partition, so the whole call runs on the worker that
-- holds it: Citus delegates the call there (create_distributed_function below, by p_partition)
-- even inside the push's transaction (force_delegation), one round trip as on one PostgreSQL.
-- Citus sends a delegated call's arguments as text, so the frames come as the segment itself
-- (p_segment) and each frame's end in it (p_ends, in bytes), not as a bytea[] written and read
-- a character at a time; and the segment's INSERT takes no subquery (Citus refuses one).
-- functions.sql's form, defined here too, is not called on Citus.
DROP FUNCTION IF EXISTS regent_append(uuid, uuid[], bytea, int4[], boolean);
CREATE OR REPLACE FUNCTION regent_append(p_partition uuid, p_hashes uuid[], p_segment bytea,
                                         p_ends int4[], p_careful boolean,
                                         p_window_seconds integer)
RETURNS TABLE (item integer, stored_offset bigint)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_next    bigint;
    v_n       integer := cardinality(p_hashes);
    v_dups    integer[];
    v_count   integer;
    v_now     timestamptz;
    v_fresh   boolean := true;
    v_frames  bytea;
BEGIN
    SELECT p.next_offset INTO v_next FROM partitions p WHERE p.id = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % does not exist', p_partition USING ERRCODE = 'P0002';
    END IF;
    v_now := clock_timestamp();

    IF p_careful THEN
        -- As in functions.sql: an entry the window has passed is no duplicate.
        DELETE FROM tx_index x
         WHERE x.partition_id = p_partition AND x.hash = ANY (p_hashes)
           AND x.created_at <= v_now - make_interval(secs => p_window_seconds);
        v_fresh := NOT EXISTS (SELECT 1 FROM tx_index x
                                WHERE x.partition_id = p_partition AND x.hash = ANY (p_hashes));
    END IF;
    IF v_fresh THEN
        INSERT INTO tx_index (partition_id, hash, "offset", created_at)
        SELECT p_partition, a.hash, v_next + a.ord - 1, v_now
          FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord);
        INSERT INTO segments (partition_id, end_offset, base_offset, created_at, frames)
        VALUES (p_partition, v_next + v_n - 1, v_next, v_now, p_segment);
        UPDATE partitions SET next_offset = v_next + v_n, last_push_at = v_now
         WHERE id = p_partition;
        RETURN;
    END IF;

    SELECT coalesce(array_agg(a.ord::integer), '{}') INTO v_dups
      FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord)
      JOIN tx_index x ON x.partition_id = p_partition AND x.hash = a.hash;

    RETURN QUERY
      SELECT a.ord::integer, x."offset"
        FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord)
        JOIN tx_index x ON x.partition_id = p_partition AND x.hash = a.hash;

    v_count := v_n - cardinality(v_dups);
    IF v_count = 0 THEN
        RETURN;
    END IF;

    -- Frame k is the bytes after frame k-1's end, up to its own.
    v_frames := (SELECT string_agg(substring(p_segment
                                             FROM coalesce(p_ends[e.ord - 1], 0) + 1
                                             FOR e.last - coalesce(p_ends[e.ord - 1], 0)),
                                   ''::bytea ORDER BY e.ord)
                   FROM unnest(p_ends) WITH ORDINALITY AS e(last, ord)
                  WHERE NOT (e.ord::integer = ANY (v_dups)));
    INSERT INTO segments (partition_id, end_offset, base_offset, created_at, frames)
    VALUES (p_partition, v_next + v_count - 1, v_next, v_now, v_frames);

    INSERT INTO tx_index (partition_id, hash, "offset", created_at)
    SELECT p_partition, f.hash, v_next + f.rn - 1, v_now
      FROM (SELECT a.hash, row_number() OVER (ORDER BY a.ord) AS rn
              FROM unnest(p_hashes) WITH ORDINALITY AS a(hash, ord)
             WHERE NOT (a.ord::integer = ANY (v_dups))) f;

    UPDATE partitions SET next_offset = v_next + v_count, last_push_at = v_now
     WHERE id = p_partition;
END
$$;
SELECT create_distributed_function('regent_append(uuid, uuid[], bytea, int4[], boolean, integer)',
                                   'p_partition', colocate_with := 'partitions',
                                   force_delegation := true);

-- regent_stream_state (crates/store/sql/functions.sql), delegated to the worker of its partition like
-- regent_append, so a stream cycle's state writes run where its state lives (an
-- INSERT ... SELECT from the coordinator would reach the shard over another connection and
-- make the cycle a two-phase commit).
SELECT create_distributed_function('regent_stream_state(uuid, uuid, text[], text[], text[], float8[])',
                                   'p_partition', colocate_with := 'partitions',
                                   force_delegation := true);
