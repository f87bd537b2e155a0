-- Regent's database functions: the one definition of each, applied at every start after the
-- migrations, under the migration lock (regent_store::migrate), on both layouts. A changed
-- function is changed here, in place; a migration holds only the schema, and the DROP
-- FUNCTION IF EXISTS a changed signature needs (as V20's for regent_append). The migrations
-- that first defined them (V1, V3, V15, V19, V20) were rewritten to hold only their schema;
-- crates/store/src/history.rs moves what databases migrated before recorded of them.
-- On Citus, crates/store/citus/functions.sql then adds the body of regent_append that runs
-- there, and routes each function to the worker of its partition. The two regent_append
-- bodies are held to the same answers by tests that call them on both layouts (scripts/test's
-- Citus pass): tests/api/append_function.rs on every rule of an append (dense offsets, a
-- resent id answered with the stored message, new messages around duplicates, the window,
-- the optimistic refusal, a missing partition), and the core suites (push_pop, ack_contract,
-- dedup_window, streams) on what the routes answer.

-- The push hot path: a batch of frames appended to one partition under its sequencer row's
-- lock, deduplicated by hash within the window (V19), only while its queue still has the
-- options the broker knew when it names them (V20: NULL, the full path, is unchecked). One
-- round trip. p_frames holds one encoded frame per item, aligned with p_hashes. Returns one
-- row per item that was NOT appended (1-based position, the offset of the message already
-- stored under that hash); every other item was appended, in order, from the partition's old
-- next_offset.
--
-- Duplicates are rare. A careful call (p_careful) first deletes the batch's entries older
-- than the window (an id taken longer ago is a new message, purged or not), then looks every
-- hash up (one b-tree scan) and appends without the ones it finds. An optimistic call skips
-- the lookup and lets the primary key find a duplicate: the insert then fails with
-- unique_violation, voiding the caller's transaction, which the broker re-runs carefully.
-- Skipping the lookup saves about a third of the call. INSERT ... ON CONFLICT DO NOTHING
-- would need no second run, but pays a speculative insertion per row (measured about a fifth
-- slower than lookup plus insert). Neither can race a concurrent insert of the same hash: the
-- hash names this partition, whose sequencer row this call holds locked. A named queue's
-- options that are not those given fail the call with no_data_found (P0002): the statement
-- writes nothing and the broker pushes the full way. seq scans are off so the lookup is never
-- planned as one (a plan cached while the table was empty would otherwise scan it whole on
-- every call).
CREATE OR REPLACE FUNCTION regent_append(p_partition uuid, p_hashes uuid[], p_frames bytea[],
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

-- Pushes to partitions the broker knows, each batch by regent_append with its queue's
-- options, in one statement (V20).
CREATE OR REPLACE FUNCTION regent_append_known(p_partitions uuid[], p_options jsonb[], p_counts integer[],
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

-- A stream cycle's state writes, on the partition's worker on Citus (V15).
CREATE OR REPLACE FUNCTION regent_stream_state(p_partition uuid, p_query uuid, p_deletes text[],
                                    p_keys text[], p_values text[], p_ends float8[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(p_deletes) > 0 THEN
        DELETE FROM stream_state
         WHERE partition_id = p_partition AND query_id = p_query AND key = ANY (p_deletes);
    END IF;
    IF cardinality(p_keys) > 0 THEN
        INSERT INTO stream_state (partition_id, query_id, key, value, window_end, updated_at)
        SELECT p_partition, p_query, s.k, s.v, s.w, now()
          FROM unnest(p_keys, p_values, p_ends) AS s(k, v, w)
        ON CONFLICT (partition_id, query_id, key) DO UPDATE
           SET value = excluded.value, window_end = excluded.window_end,
               updated_at = excluded.updated_at;
    END IF;
END
$$;
