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
-- The cursor log's superseded rows (V21): at most 10,000 rows whose next row (the one that
-- superseded it) was written before regent_compactable_before (sql/functions.sql, "A stale
-- read loses": a writer that read the state stale must still meet the row that superseded
-- it), by their row addresses. `at` grows with `seq` within a cursor (each row is written
-- after the one before it committed), so a row is deletable exactly when its next row is
-- old enough: one index probe per row, where looking for any newer old-enough row walked
-- every newer row of the cursor. A cursor's state is its newest row, which has no next row
-- and is never deleted; with the xmin horizon held the deleted rows stay until it moves on,
-- behind the newest ones, where no reader of a state goes.
-- (no parameters)
DELETE FROM cursor_log WHERE ctid = ANY (ARRAY(
    SELECT l.ctid FROM cursor_log l
     WHERE (SELECT n.at FROM cursor_log n
             WHERE n.partition_id = l.partition_id AND n.consumer_group = l.consumer_group
               AND n.seq > l.seq
             ORDER BY n.seq LIMIT 1) < regent_compactable_before()
     LIMIT 10000))

-- name: compact_citus
-- compact on Citus: every shard deletes its superseded rows at once.
-- (no parameters)
DELETE FROM cursor_log l
 WHERE (SELECT n.at FROM cursor_log n
         WHERE n.partition_id = l.partition_id AND n.consumer_group = l.consumer_group
           AND n.seq > l.seq
         ORDER BY n.seq LIMIT 1) < regent_compactable_before()
