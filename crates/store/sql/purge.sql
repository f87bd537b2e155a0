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
