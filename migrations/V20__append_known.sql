-- A push whose partitions the broker already knows by name (issue 35): one statement, so one
-- transaction of its own, with no lookup before it and no BEGIN or COMMIT round trip around
-- it. The broker names each partition by the id it learned and its queue's options as it
-- learned them. regent_append takes those options (NULL: unchecked, the full path, which
-- looked the partition up in its own transaction) and, in the statement that locks the
-- partition's sequencer row, finds the row only while its queue still has exactly those
-- options: a partition gone (one made again has a new id) or a queue's options changed fail
-- the call with no_data_found (P0002), the whole statement writes nothing, and the broker
-- forgets what it knew and pushes the full way. Otherwise as V19.
DROP FUNCTION regent_append(uuid, uuid[], bytea[], boolean, integer);

CREATE FUNCTION regent_append(p_partition uuid, p_hashes uuid[], p_frames bytea[],
                              p_careful boolean, p_window_seconds integer,
                              p_options jsonb DEFAULT NULL)
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
    SELECT p.next_offset INTO v_next FROM partitions p
     WHERE p.id = p_partition
       AND (p_options IS NULL
            OR EXISTS (SELECT 1 FROM queues q WHERE q.id = p.queue_id AND q.options = p_options))
       FOR UPDATE OF p;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % is gone, or its queue''s options are not those given', p_partition USING ERRCODE = 'P0002';
    END IF;
    -- Taken after the lock, so created_at grows with the offset within a partition.
    v_now := clock_timestamp();

    IF p_careful THEN
        -- An entry the window has passed is no duplicate, purged or not: it goes, and the
        -- id is taken anew below.
        DELETE FROM tx_index x
         WHERE x.hash = ANY (p_hashes)
           AND x.created_at <= v_now - make_interval(secs => p_window_seconds);
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

-- Every batch of a push to known partitions, appended by regent_append in the order given
-- (partition id order, the global lock order), the k-th batch being the next p_counts[k]
-- hashes and frames. Only items that were not appended come back, as (batch, item) with the
-- offset holding their transaction id.
CREATE FUNCTION regent_append_known(p_partitions uuid[], p_options jsonb[], p_counts integer[],
                                    p_hashes uuid[], p_frames bytea[], p_careful boolean,
                                    p_window_seconds integer)
RETURNS TABLE (batch integer, item integer, stored_offset bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_from integer := 1;
    v_to   integer;
BEGIN
    FOR k IN 1 .. cardinality(p_partitions) LOOP
        v_to := v_from + p_counts[k] - 1;
        RETURN QUERY
          SELECT k, a.item, a.stored_offset
            FROM regent_append(p_partitions[k], p_hashes[v_from:v_to], p_frames[v_from:v_to],
                               p_careful, p_window_seconds, p_options[k]) AS a;
        v_from := v_to + 1;
    END LOOP;
END
$$;
