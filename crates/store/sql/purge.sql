-- The transaction index's own clock (crate::purge): entries older than the window are purged,
-- after which their transaction ids neither deduplicate pushes nor resolve acks. Each
-- `-- name:` section is one statement, exactly as sent (crates/store/build.rs); a `_citus`
-- statement is the Citus layout's in place of the one without the suffix.

-- name: purge
-- At most 10,000 entries older than $1 seconds, by their row addresses: short transactions
-- however far behind the clock is.
-- $1 seconds
DELETE FROM tx_index WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM tx_index
     WHERE created_at < now() - make_interval(secs => $1::float8) LIMIT 10000))

-- name: purge_citus
-- purge on Citus: a row address means nothing beyond its shard, so every shard deletes its
-- expired entries at once, in parallel: one interval's worth each, since the clock runs every
-- interval.
-- $1 seconds
DELETE FROM tx_index WHERE created_at < now() - make_interval(secs => $1::float8)

-- name: compact
-- The cursor log's superseded rows (V21) among those stored in blocks $1 up to (not
-- including) $2, by a TID range scan: a slice of the table, so the clock
-- (regent_service::compact) goes over the log a slice at a time, each slice a short
-- statement, never one long one that rescans from the front. A row goes when its next row
-- (the one that superseded it) was written before regent_compactable_before
-- (sql/functions.sql, "A stale read loses": a writer that read the state stale must still
-- meet the row that superseded it). `at` grows with `seq` within a cursor (each row is
-- written after the one before it committed), so a row is deletable exactly when its next
-- row is old enough: one index probe per row, and none for a row itself written after the
-- bound (its next row was written later still), which a pass meets in its young half. A
-- cursor's state is its newest row, which has no next row and is never deleted; with the
-- xmin horizon held the deleted rows stay until it moves on, behind the newest ones, where
-- no reader of a state goes. Answers how many rows went and the table's size in blocks now,
-- where the clock's pass ends.
-- $1 first block, $2 end block
WITH gone AS (
    DELETE FROM cursor_log WHERE ctid = ANY (ARRAY(
        SELECT l.ctid FROM cursor_log l
         WHERE l.ctid >= format('(%s,0)', $1::bigint)::tid
           AND l.ctid < format('(%s,0)', $2::bigint)::tid
           AND l.at < regent_compactable_before()
           AND (SELECT n.at FROM cursor_log n
                 WHERE n.partition_id = l.partition_id AND n.consumer_group = l.consumer_group
                   AND n.seq > l.seq
                 ORDER BY n.seq LIMIT 1) < regent_compactable_before()))
    RETURNING 1)
SELECT (SELECT count(*) FROM gone)::bigint AS deleted,
       pg_relation_size('cursor_log') / current_setting('block_size')::bigint AS blocks

-- name: compact_citus
-- compact on Citus: a row address means nothing beyond its shard, so every shard deletes its
-- superseded rows at once, once a pass.
-- (no parameters)
DELETE FROM cursor_log l
 WHERE l.at < regent_compactable_before()
   AND (SELECT n.at FROM cursor_log n
         WHERE n.partition_id = l.partition_id AND n.consumer_group = l.consumer_group
           AND n.seq > l.seq
         ORDER BY n.seq LIMIT 1) < regent_compactable_before()
