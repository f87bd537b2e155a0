-- Deduplication is a window (issue 35): DEDUP_WINDOW_SECONDS, 5 minutes by default, at most
-- 24 h. A transaction id the partition took less than the window ago (by this database's
-- clock) is a duplicate; one taken longer ago is a new message, whether or not the purge clock
-- has deleted its old entry yet (ARCHITECTURE.md, "Invariants").
--
-- regent_append takes the window. An optimistic call is unchanged: any entry of the hash,
-- stale or not, fails the insert with unique_violation and the broker re-runs carefully. A
-- careful call first deletes the batch's entries older than the window, so the exact edge
-- costs nothing on the common path. Same body as V3 otherwise.
DROP FUNCTION regent_append(uuid, uuid[], bytea[], boolean);

CREATE FUNCTION regent_append(p_partition uuid, p_hashes uuid[], p_frames bytea[],
                              p_careful boolean, p_window_seconds integer)
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
