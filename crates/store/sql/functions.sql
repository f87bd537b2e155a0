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

-- Each partition's head: the next offset a push appends at, and when the last push was. On
-- one PostgreSQL no push writes the `partitions` row: under a held xmin horizon every update
-- of it left a version that every later lookup of the partition walked (348,401 for 100
-- partitions after ten minutes of the job queue, issue 49). The head is the newest segment,
-- one backward probe of the segments' primary key. A log emptied by retention or a clear
-- leaves its head in `first_offset` and `last_push_at`, which they write; the row's
-- `next_offset` is no longer written here. crates/store/citus/functions.sql replaces this
-- view with the row's columns, which the Citus append still writes. Every reader of a
-- partition's head reads it here.
CREATE OR REPLACE VIEW partition_heads AS
SELECT p.id, p.tenant, p.queue_id, p.name, p.created_at, p.first_offset,
       coalesce(h.end_offset + 1, p.first_offset) AS next_offset,
       coalesce(h.created_at, p.last_push_at) AS last_push_at
  FROM partitions p
  LEFT JOIN LATERAL (SELECT s.end_offset, s.created_at FROM segments s
                      WHERE s.partition_id = p.id
                      ORDER BY s.end_offset DESC LIMIT 1) h ON true;

-- The push hot path: a batch of frames appended to one partition under its sequencer row's
-- lock, deduplicated by hash within the window (V19), only while its queue still has the
-- options the broker knew when it names them (V20: NULL, the full path, is unchecked). One
-- round trip. p_frames holds one encoded frame per item, aligned with p_hashes. Returns one
-- row per item that was NOT appended (1-based position, the offset of the message already
-- stored under that hash); every other item was appended, in order, from the partition's head
-- (partition_heads).
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
    PERFORM 1 FROM partitions p
     WHERE p.id = p_partition
       AND (p_options IS NULL
            OR EXISTS (SELECT 1 FROM queues q WHERE q.id = p.queue_id AND q.options = p_options))
       FOR UPDATE OF p;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % is gone, or its queue''s options are not those given', p_partition USING ERRCODE = 'P0002';
    END IF;
    -- Read in a statement after the lock's, so under a snapshot that holds the append of
    -- every push that held the lock before (READ COMMITTED: a fresh snapshot per statement).
    SELECT h.next_offset INTO v_next FROM partition_heads h WHERE h.id = p_partition;
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
END
$$;

-- Pushes to partitions the broker knows, in one statement (V20): batch k of p_counts[k] items
-- to p_partitions[k] (distinct, in id order: the global lock order), checked against its
-- queue's options p_options[k] as regent_append checks them.
--
-- An optimistic call (the hot path: no duplicate lookup) appends every batch set-wise, in two
-- statements whatever the number of partitions: one locks every partition's row in id order
-- and checks the options, the next (under a snapshot taken after the locks, as in
-- regent_append) reads each head and writes every segment and index entry. A push of eight
-- fused requests to eight partitions was eight calls of regent_append, 33 statements, and
-- each call spent about half its time outside its four statements (BENCHMARKS.md, issue 49
-- step 4). A duplicate still fails the index's primary
-- key (unique_violation, nothing written) and the broker re-runs carefully. A careful call
-- takes each batch through regent_append, which looks duplicates up.
CREATE OR REPLACE FUNCTION regent_append_known(p_partitions uuid[], p_options jsonb[], p_counts integer[],
                                    p_hashes uuid[], p_frames bytea[], p_careful boolean,
                                    p_window_seconds integer)
RETURNS TABLE (batch integer, item integer, stored_offset bigint)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_from integer := 1;
    v_to   integer;
    v_now  timestamptz;
BEGIN
    IF p_careful THEN
        FOR k IN 1 .. cardinality(p_partitions) LOOP
            v_to := v_from + p_counts[k] - 1;
            RETURN QUERY
              SELECT k, a.item, a.stored_offset
                FROM regent_append(p_partitions[k], p_hashes[v_from:v_to], p_frames[v_from:v_to],
                                   p_careful, p_window_seconds, p_options[k]) AS a;
            v_from := v_to + 1;
        END LOOP;
        RETURN;
    END IF;

    IF (SELECT count(*)
          FROM unnest(p_partitions, p_options) AS b(id, options)
          JOIN (SELECT p.id, p.queue_id FROM partitions p
                 WHERE p.id = ANY (p_partitions)
                 ORDER BY p.id
                   FOR UPDATE OF p) l ON l.id = b.id
         WHERE b.options IS NULL
            OR EXISTS (SELECT 1 FROM queues q WHERE q.id = l.queue_id AND q.options = b.options))
       <> cardinality(p_partitions) THEN
        RAISE EXCEPTION 'a partition is gone, or its queue''s options are not those given' USING ERRCODE = 'P0002';
    END IF;
    -- Taken after the locks, so created_at grows with the offset within a partition.
    v_now := clock_timestamp();

    -- A statement of its own, after the locks': its snapshot holds the append of every push
    -- that held one of them before. `first` is the batch's first item in p_hashes/p_frames.
    WITH b AS MATERIALIZED (
           SELECT b.id, b.n, (sum(b.n) OVER (ORDER BY b.k))::integer - b.n + 1 AS first,
                  (SELECT h.next_offset FROM partition_heads h WHERE h.id = b.id) AS base
             FROM unnest(p_partitions, p_counts) WITH ORDINALITY AS b(id, n, k)),
         s AS (
           INSERT INTO segments (partition_id, end_offset, base_offset, created_at, frames)
           SELECT b.id, b.base + b.n - 1, b.base, v_now,
                  (SELECT string_agg(e.f, ''::bytea ORDER BY e.ord)
                     FROM unnest(p_frames[b.first:b.first + b.n - 1]) WITH ORDINALITY AS e(f, ord))
             FROM b)
    INSERT INTO tx_index (hash, "offset", created_at)
    SELECT p_hashes[b.first + i - 1], b.base + i - 1, v_now
      FROM b CROSS JOIN LATERAL generate_series(1, b.n) AS i;
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

-- The consumer path's writers (V21): every change of a cursor's state appends the successor
-- of its newest `cursor_log` row, never updates one. A writer first takes its turn on the
-- cursor by locking its `cursors` row (FOR UPDATE writes no new row version), then reads the
-- newest row in a later statement, so a fresh snapshot, and appends after it: every row
-- another writer appended under the lock was committed before this one got it, so the fresh
-- snapshot sees it, and seq + 1 is free. (Read in the statement that locked, a writer would
-- act on the state its snapshot had before the wait.) Turns are taken one cursor at a time,
-- in the global order (partition, then group), each statement naming its partition: on
-- Citus each is routed to the partition's shard (Citus locks rows only in a statement routed
-- to one shard). The state is read into a variable by a statement of its own, never joined
-- with a distributed table: Citus would push such a join to the worker, function call and
-- all, and refuse the call's own distributed query there.

-- A stale read loses. The hot writers on one PostgreSQL (`claim` in sql/claim.sql,
-- `complete_in_lease` in sql/cursor.sql) take their turns and read the state in one statement, so they
-- may act on a state older than the newest committed one: a writer that held the turn may
-- have appended and committed after this statement's snapshot was taken. Such a writer's
-- append of seq + 1 then meets the row already there and appends nothing (ON CONFLICT DO
-- NOTHING on the log's primary key): the claim passes the cursor over, and the ack leaves
-- the completion to the full path, which reads the state under its turn. That holds only while the row it meets still exists, so:
-- - it appends only within regent_read_in_time's bound (30 s) of its statement's start;
-- - compaction (purge.sql `compact`) deletes a row only when the row after it was written
--   (`at`, clock time after its writer read the row before it) more than twice that bound ago.
-- A row N + 1 a stale reader could meet was committed after the reader's snapshot, and any
-- row N + 2 was written after N + 1 committed, so N + 1 outlives the reader's bound.
CREATE OR REPLACE FUNCTION regent_read_in_time() RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    SELECT clock_timestamp() < statement_timestamp() + interval '30 seconds'
$$;

-- The newest `at` a superseding row may have for compaction to delete what it supersedes:
-- twice regent_read_in_time's bound ago.
CREATE OR REPLACE FUNCTION regent_compactable_before() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT now() - interval '60 seconds'
$$;

-- One cursor's state now, as the view cursor_state states it for many: its newest log row, or
-- its start while it has none; no row when it has no cursor. The partition is named to both
-- tables, so Citus routes the read to the partition's shard (through the view, the log's
-- lateral lookup names the partition only by the join, and Citus sends it to every shard).
CREATE OR REPLACE FUNCTION regent_cursor_now(p_partition uuid, p_group text)
RETURNS TABLE (seq bigint, committed bigint, lease_id uuid, lease_expires_at timestamptz,
               lease_end bigint, retry_count integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT coalesce(s.seq, 0), coalesce(s.committed, c.start), s.lease_id, s.lease_expires_at,
           s.lease_end, coalesce(s.retry_count, 0)
      FROM cursors c
      LEFT JOIN LATERAL (
           SELECT l.seq, l.committed, l.lease_id, l.lease_expires_at, l.lease_end, l.retry_count
             FROM cursor_log l
            WHERE l.partition_id = p_partition AND l.consumer_group = p_group
            ORDER BY l.seq DESC LIMIT 1) s ON true
     WHERE c.partition_id = p_partition AND c.consumer_group = p_group;
END
$$;

-- Takes the turn on one cursor (waiting for it, or, with p_skip, skipping a cursor another
-- writer holds) and answers its state then; no row when skipped or when it has no cursor.
CREATE OR REPLACE FUNCTION regent_cursor_turn(p_partition uuid, p_group text, p_skip boolean)
RETURNS TABLE (seq bigint, committed bigint, lease_id uuid, lease_expires_at timestamptz,
               lease_end bigint, retry_count integer)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_skip THEN
        PERFORM 1 FROM cursors c
         WHERE c.partition_id = p_partition AND c.consumer_group = p_group
           FOR UPDATE SKIP LOCKED;
    ELSE
        PERFORM 1 FROM cursors c
         WHERE c.partition_id = p_partition AND c.consumer_group = p_group
           FOR UPDATE;
    END IF;
    IF FOUND THEN
        RETURN QUERY SELECT * FROM regent_cursor_now(p_partition, p_group);
    END IF;
END
$$;

-- Appends a cursor's next state (the caller holds its turn and read `seq`).
CREATE OR REPLACE FUNCTION regent_cursor_next(p_partition uuid, p_group text, p_seq bigint,
                                              p_committed bigint, p_lease uuid,
                                              p_expires timestamptz, p_end bigint,
                                              p_retry integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cursor_log (partition_id, consumer_group, seq, committed, lease_id,
                            lease_expires_at, lease_end, retry_count)
    VALUES (p_partition, p_group, p_seq + 1, p_committed, p_lease, p_expires, p_end, p_retry);
END
$$;

-- Claims one cursor of the group for a lease, when it still has something to claim: skipped
-- (no row) when another writer holds it or it has nothing. Returns what the claim needs of
-- the cursor as it was and the lease's range.
CREATE OR REPLACE FUNCTION regent_claim_cursor(p_partition uuid, p_group text, p_window float8,
                                               p_lease uuid, p_lease_seconds float8,
                                               p_batch bigint)
RETURNS TABLE (partition_id uuid, lease_id uuid, name text, committed bigint, lease_end bigint,
               old_end bigint, last_claim timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    s   record;
    p   record;
    v_end bigint;
BEGIN
    SELECT * INTO s FROM regent_cursor_turn(p_partition, p_group, true);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT g.next_offset, g.name, g.last_push_at INTO p FROM partition_heads g WHERE g.id = p_partition;
    IF NOT (s.committed < p.next_offset - 1
            AND (s.lease_id IS NULL OR s.lease_expires_at <= now())
            AND (p_window = 0 OR p.last_push_at <= now() - make_interval(secs => p_window)))
    THEN
        RETURN;
    END IF;
    v_end := least(p.next_offset - 1, s.committed + p_batch);
    PERFORM regent_cursor_next(p_partition, p_group, s.seq, s.committed, p_lease,
                               now() + make_interval(secs => p_lease_seconds), v_end,
                               s.retry_count);
    RETURN QUERY SELECT p_partition, p_lease, p.name, s.committed, v_end, s.lease_end,
                        s.lease_expires_at;
END
$$;

-- The claim of one partition on Citus (crate::claim::citus): regent_claim_cursor, then the
-- segments of the leased range as the claim (claim.sql) reads them.
CREATE OR REPLACE FUNCTION regent_claim_one(p_partition uuid, p_group text, p_window float8,
                                            p_lease uuid, p_lease_seconds float8,
                                            p_batch bigint)
RETURNS TABLE (partition_id uuid, lease_id uuid, name text, committed bigint, lease_end bigint,
               old_end bigint, last_claim timestamptz, tombstoned bigint[],
               db_now timestamptz, base_offset bigint, end_offset bigint,
               created_at timestamptz, frames bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v record;
BEGIN
    SELECT * INTO v
      FROM regent_claim_cursor(p_partition, p_group, p_window, p_lease, p_lease_seconds,
                               p_batch);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT p_partition, p_lease, v.name, v.committed, v.lease_end, v.old_end, v.last_claim,
           (SELECT array_agg(t."offset" ORDER BY t."offset") FROM tombstones t
             WHERE t.partition_id = p_partition AND t."offset" > v.committed
               AND t."offset" <= v.lease_end),
           now(), NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::bytea
     WHERE NOT EXISTS (SELECT 1 FROM segments g
                        WHERE g.partition_id = p_partition AND g.end_offset > v.committed
                          AND g.base_offset <= v.lease_end);
    RETURN QUERY
    SELECT p_partition, p_lease, v.name, v.committed, v.lease_end, v.old_end, v.last_claim,
           (SELECT array_agg(t."offset" ORDER BY t."offset") FROM tombstones t
             WHERE t.partition_id = p_partition AND t."offset" > v.committed
               AND t."offset" <= v.lease_end),
           now(), s.base_offset, s.end_offset, s.created_at, s.frames
      FROM (
        (SELECT g.base_offset, g.end_offset, g.created_at, g.frames FROM segments g
          WHERE g.partition_id = p_partition AND g.end_offset > v.committed
            AND g.end_offset <= v.lease_end)
        UNION ALL
        (SELECT g.base_offset, g.end_offset, g.created_at, g.frames FROM segments g
          WHERE g.partition_id = p_partition AND g.end_offset > v.lease_end
          ORDER BY g.end_offset LIMIT 1)) s
     WHERE s.base_offset <= v.lease_end
     ORDER BY s.end_offset;
END
$$;

-- Ends claims as decided (crate::claim::finish): trims each partition's lease to what was
-- delivered, releases the empty ones, commits auto-acked deliveries, undoes a claim, each only
-- while the claim's lease (p_held) still holds the partition; appends nothing where nothing
-- changes.
CREATE OR REPLACE FUNCTION regent_finish(p_pids uuid[], p_committed bigint[], p_release boolean[],
                                         p_ends bigint[], p_group text, p_leases uuid[],
                                         p_undo boolean[], p_last timestamptz[],
                                         p_held uuid[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    u record;
    s record;
    v_lease uuid;
    v_expires timestamptz;
BEGIN
    FOR u IN
        SELECT * FROM unnest(p_pids, p_committed, p_release, p_ends, p_leases, p_undo, p_last,
                             p_held)
                   AS u(pid, committed, release, lease_end, lease, undo, last_claim, held)
         ORDER BY 1
    LOOP
        SELECT * INTO s FROM regent_cursor_turn(u.pid, p_group, false);
        CONTINUE WHEN NOT FOUND OR s.lease_id IS DISTINCT FROM u.held;
        v_lease := CASE WHEN u.release THEN NULL ELSE coalesce(u.lease, s.lease_id) END;
        v_expires := CASE WHEN u.undo THEN u.last_claim ELSE s.lease_expires_at END;
        CONTINUE WHEN (u.committed, v_lease, v_expires, u.lease_end)
                      IS NOT DISTINCT FROM (s.committed, s.lease_id, s.lease_expires_at,
                                            s.lease_end);
        PERFORM regent_cursor_next(u.pid, p_group, s.seq, u.committed, v_lease, v_expires,
                                   u.lease_end, s.retry_count);
    END LOOP;
END
$$;

-- Takes the ack's turn on the group's cursor of the tenant's partition and reads its state
-- then (crate::cursor::lock); no row when the tenant's partition has no cursor of the group.
CREATE OR REPLACE FUNCTION regent_cursor_locked(p_partition uuid, p_group text, p_tenant text)
RETURNS TABLE (committed bigint, lease_id uuid, live boolean, lease_end bigint,
               retry_count integer, options jsonb, queue_id uuid, queue text,
               partition_id uuid, next_offset bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s record;
BEGIN
    PERFORM 1 FROM partitions p WHERE p.id = p_partition AND p.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO s FROM regent_cursor_turn(p_partition, p_group, false);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT s.committed, s.lease_id, (s.lease_id IS NOT NULL AND s.lease_expires_at > now()),
           s.lease_end, s.retry_count, q.options, q.id, q.name, p.id, p.next_offset
      FROM partition_heads p JOIN queues q ON q.id = p.queue_id
     WHERE p.id = p_partition;
END
$$;

-- complete_in_lease (sql/cursor.sql) on Citus: one cursor after another, each statement routed
-- to the cursor's shard, each read under its turn.
CREATE OR REPLACE FUNCTION regent_complete_in_lease_each(p_tenant text, p_pids uuid[],
                                                    p_groups text[], p_leases uuid[],
                                                    p_lowest bigint[], p_highest bigint[])
RETURNS TABLE (k bigint, committed bigint, lease_end bigint, retry_count integer,
               queue_id uuid, queue text, options jsonb, next_offset bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    a record;
    s record;
    v_done boolean;
BEGIN
    FOR a IN
        SELECT * FROM unnest(p_pids, p_groups, p_leases, p_lowest, p_highest)
                      WITH ORDINALITY AS a(pid, grp, lease, lowest, highest, k)
         ORDER BY pid, grp
    LOOP
        PERFORM 1 FROM partitions p WHERE p.id = a.pid AND p.tenant = p_tenant;
        CONTINUE WHEN NOT FOUND;
        SELECT * INTO s FROM regent_cursor_turn(a.pid, a.grp, false);
        CONTINUE WHEN NOT FOUND;
        CONTINUE WHEN NOT (s.lease_id = a.lease AND s.lease_expires_at > now()
                           AND s.committed < a.lowest AND s.lease_end >= a.highest);
        v_done := s.lease_end <= a.highest;
        PERFORM regent_cursor_next(a.pid, a.grp, s.seq, a.highest,
                                   CASE WHEN v_done THEN NULL ELSE s.lease_id END,
                                   s.lease_expires_at, s.lease_end,
                                   CASE WHEN v_done THEN 0 ELSE s.retry_count END);
        RETURN QUERY
        SELECT a.k, s.committed, s.lease_end, s.retry_count, p.queue_id, q.name, q.options,
               p.next_offset
          FROM partition_heads p JOIN queues q ON q.id = p.queue_id
         WHERE p.id = a.pid;
    END LOOP;
END
$$;

-- The cursors of the tenant whose lease is p_lease now (a lease may have been seen on a
-- cursor since claimed again under another): read without taking turns, in the global lock
-- order, for regent_extend and regent_release to take theirs.
CREATE OR REPLACE FUNCTION regent_lease_holders(p_lease uuid, p_tenant text)
RETURNS TABLE (partition_id uuid, consumer_group text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT s.partition_id, s.consumer_group
      FROM (SELECT DISTINCT l.partition_id, l.consumer_group FROM cursor_log l
             WHERE l.lease_id = p_lease) h
      JOIN cursor_state s
        ON s.partition_id = h.partition_id AND s.consumer_group = h.consumer_group
      JOIN partitions p ON p.id = s.partition_id
     WHERE s.lease_id = p_lease AND p.tenant = p_tenant
     ORDER BY 1, 2;
END
$$;

-- Every cursor whose live lease is p_lease gets expiry = max(current, now + p_seconds);
-- returns the new expiries. Expired, released or unknown leases are not revived.
CREATE OR REPLACE FUNCTION regent_extend(p_lease uuid, p_seconds float8, p_tenant text)
RETURNS TABLE (expires_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    h record;
    s record;
    v_expires timestamptz;
BEGIN
    FOR h IN SELECT * FROM regent_lease_holders(p_lease, p_tenant) LOOP
        SELECT * INTO s FROM regent_cursor_turn(h.partition_id, h.consumer_group, false);
        CONTINUE WHEN NOT FOUND OR NOT (s.lease_id = p_lease AND s.lease_expires_at > now());
        v_expires := greatest(s.lease_expires_at, now() + make_interval(secs => p_seconds));
        PERFORM regent_cursor_next(h.partition_id, h.consumer_group, s.seq, s.committed,
                                   s.lease_id, v_expires, s.lease_end, s.retry_count);
        expires_at := v_expires;
        RETURN NEXT;
    END LOOP;
END
$$;

-- Ends a live lease that no client received (crate::lease::release): like an expiry, no
-- retry charged, and the expiry pulled back to now (never pushed forward) so the claim order
-- stays least recently claimed first. Returns each released cursor's queue and group.
CREATE OR REPLACE FUNCTION regent_release(p_lease uuid, p_tenant text)
RETURNS TABLE (queue text, consumer_group text)
LANGUAGE plpgsql AS $$
DECLARE
    h record;
    s record;
BEGIN
    FOR h IN SELECT * FROM regent_lease_holders(p_lease, p_tenant) LOOP
        SELECT * INTO s FROM regent_cursor_turn(h.partition_id, h.consumer_group, false);
        CONTINUE WHEN NOT FOUND OR NOT (s.lease_id = p_lease AND s.lease_expires_at > now());
        PERFORM regent_cursor_next(h.partition_id, h.consumer_group, s.seq, s.committed, NULL,
                                   least(s.lease_expires_at, now()), s.lease_end,
                                   s.retry_count);
        SELECT q.name INTO queue
          FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = h.partition_id;
        consumer_group := h.consumer_group;
        RETURN NEXT;
    END LOOP;
END
$$;

-- Moves the group's cursors on a queue's partitions (one named, or all) to the end, or to
-- after the last segment appended at or before p_at (crate::seek: the rules are there).
-- Each moved cursor answers the time its new last message was appended.
CREATE OR REPLACE FUNCTION regent_seek(p_queue uuid, p_group text, p_to_end boolean,
                                       p_at timestamptz, p_partition text)
RETURNS TABLE (appended_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    t record;
    s record;
BEGIN
    FOR t IN
        SELECT p.id,
               CASE WHEN p_to_end THEN p.next_offset - 1
                    ELSE greatest(coalesce((SELECT max(g.end_offset) FROM segments g
                                             WHERE g.partition_id = p.id
                                               AND g.created_at <= p_at), -1),
                                  p.first_offset - 1)
               END AS target
          FROM partition_heads p
         WHERE p.queue_id = p_queue AND (p_partition IS NULL OR p.name = p_partition)
         ORDER BY p.id
    LOOP
        SELECT * INTO s FROM regent_cursor_turn(t.id, p_group, false);
        CONTINUE WHEN NOT FOUND;
        PERFORM regent_cursor_next(t.id, p_group, s.seq, t.target, NULL,
                                   least(s.lease_expires_at, now()), t.target, 0);
        SELECT g.created_at INTO appended_at FROM segments g
         WHERE g.partition_id = t.id AND g.end_offset >= t.target AND t.target >= 0
         ORDER BY g.end_offset LIMIT 1;
        RETURN NEXT;
    END LOOP;
END
$$;

-- Deletes the group's cursors with their logs on the tenant's queues (one, or all; crate::
-- seek::delete_group), each after taking its turn, so no writer appends to a cursor being
-- deleted; with p_forget, also its stored start points. Answers how many cursors went, and
-- the queues they were on.
CREATE OR REPLACE FUNCTION regent_delete_group(p_tenant text, p_group text, p_queue text,
                                               p_forget boolean)
RETURNS TABLE (cursors bigint, queues uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    v_n bigint := 0;
    v_queues uuid[] := '{}';
BEGIN
    FOR r IN
        SELECT c.partition_id, c.queue_id FROM cursors c
         WHERE c.consumer_group = p_group
           AND c.queue_id IN (SELECT q.id FROM queues q
                               WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue))
         ORDER BY 1
    LOOP
        PERFORM 1 FROM cursors c
         WHERE c.partition_id = r.partition_id AND c.consumer_group = p_group FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM cursor_log l
         WHERE l.partition_id = r.partition_id AND l.consumer_group = p_group;
        DELETE FROM cursors c
         WHERE c.partition_id = r.partition_id AND c.consumer_group = p_group;
        v_n := v_n + 1;
        IF NOT r.queue_id = ANY (v_queues) THEN
            v_queues := v_queues || r.queue_id;
        END IF;
    END LOOP;
    IF p_forget THEN
        DELETE FROM subscriptions s
         WHERE s.consumer_group = p_group
           AND s.queue_id IN (SELECT q.id FROM queues q
                               WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue));
    END IF;
    cursors := v_n;
    queues := v_queues;
    RETURN NEXT;
END
$$;

-- Retention's move of the cursors of partitions whose first offsets moved (crate::retention):
-- each cursor below its partition's new first offset moves up to it, and a lease entirely
-- over deleted messages is released; one cursor at a time, in the global lock order.
CREATE OR REPLACE FUNCTION regent_retain_cursors(p_pids uuid[], p_first_kept bigint[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
    s record;
BEGIN
    FOR r IN
        SELECT c.partition_id, c.consumer_group,
               p_first_kept[array_position(p_pids, c.partition_id)] AS first_kept
          FROM cursors c WHERE c.partition_id = ANY (p_pids)
         ORDER BY 1, 2
    LOOP
        SELECT * INTO s FROM regent_cursor_turn(r.partition_id, r.consumer_group, false);
        CONTINUE WHEN NOT FOUND OR s.committed >= r.first_kept - 1;
        PERFORM regent_cursor_next(r.partition_id, r.consumer_group, s.seq, r.first_kept - 1,
                                   CASE WHEN s.lease_end IS NULL OR s.lease_end < r.first_kept
                                        THEN NULL ELSE s.lease_id END,
                                   s.lease_expires_at, s.lease_end, s.retry_count);
    END LOOP;
END
$$;

-- A clear's move of every cursor of the cleared partitions (locked before, crate::queues) to
-- the partition's end, leases released and retry counts reset; one cursor at a time, in the
-- global lock order.
CREATE OR REPLACE FUNCTION regent_clear_cursors(p_pids uuid[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
    s record;
    v_end bigint;
BEGIN
    FOR r IN
        SELECT c.partition_id, c.consumer_group FROM cursors c
         WHERE c.partition_id = ANY (p_pids)
         ORDER BY 1, 2
    LOOP
        SELECT * INTO s FROM regent_cursor_turn(r.partition_id, r.consumer_group, false);
        CONTINUE WHEN NOT FOUND;
        SELECT p.next_offset - 1 INTO v_end FROM partition_heads p WHERE p.id = r.partition_id;
        PERFORM regent_cursor_next(r.partition_id, r.consumer_group, s.seq,
                                   greatest(s.committed, v_end), NULL, NULL, s.lease_end, 0);
    END LOOP;
END
$$;
