-- The consumer path's state as an append-only log (issue 49). A cursor's committed offset,
-- lease and retry count were updated in place on its `cursors` row by every claim and every
-- ack; the lease columns were indexed, so no such update was HOT, and with the xmin horizon
-- held (a long transaction anywhere on the database) every claim walked every version a
-- held horizon kept. Now each change of a cursor's state is a new row of `cursor_log`, the
-- successor (seq + 1) of the newest one, and the state is the newest row: read by a
-- backward scan of the primary key that stops at the first visible row, however many older
-- ones a held horizon keeps. Older rows are deleted in batches by maintenance.
--
-- `cursors` keeps the identity of each (partition, group): its queue, and `start`, the
-- committed offset it was made at (its state while it has no log row). Its row is never
-- updated by the consumer path: a writer locks it (FOR UPDATE, which writes no new version)
-- to take its turn on the cursor, then appends. Its indexes no longer cover a column that
-- changes. design/architecture.md and docs/design/consumer-path.md say why.
CREATE TABLE cursor_log (
    partition_id      uuid NOT NULL,
    consumer_group    text NOT NULL,
    seq               bigint NOT NULL,
    committed         bigint NOT NULL,
    lease_id          uuid,
    lease_expires_at  timestamptz,
    lease_end         bigint,
    retry_count       integer NOT NULL DEFAULT 0,
    -- When the row was written: clock time after its writer's read of the row before
    -- (compaction's rule needs it: sql/functions.sql, "A stale read loses").
    at                timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (partition_id, consumer_group, seq)
);
CREATE INDEX cursor_log_lease ON cursor_log (lease_id) WHERE lease_id IS NOT NULL;

-- Every cursor's state as it was, as its first log row: committed cursors, live leases and
-- retry counts carry over.
INSERT INTO cursor_log (partition_id, consumer_group, seq, committed, lease_id,
                        lease_expires_at, lease_end, retry_count)
SELECT partition_id, consumer_group, 1, committed, lease_id, lease_expires_at, lease_end,
       retry_count
  FROM cursors;

DROP INDEX cursors_lease;
DROP INDEX cursors_claim_order;
ALTER TABLE cursors RENAME COLUMN committed TO start;
ALTER TABLE cursors DROP COLUMN lease_id, DROP COLUMN lease_expires_at, DROP COLUMN lease_end,
                    DROP COLUMN retry_count;
ALTER TABLE cursors SET (fillfactor = 100);
CREATE INDEX cursors_walk ON cursors (queue_id, consumer_group, partition_id);

-- A cursor's state now: its newest log row, or its start while it has none.
CREATE VIEW cursor_state AS
SELECT c.partition_id, c.consumer_group, c.queue_id,
       coalesce(s.seq, 0) AS seq,
       coalesce(s.committed, c.start) AS committed,
       s.lease_id, s.lease_expires_at, s.lease_end,
       coalesce(s.retry_count, 0) AS retry_count
  FROM cursors c
  LEFT JOIN LATERAL (
       SELECT l.seq, l.committed, l.lease_id, l.lease_expires_at, l.lease_end, l.retry_count
         FROM cursor_log l
        WHERE l.partition_id = c.partition_id AND l.consumer_group = c.consumer_group
        ORDER BY l.seq DESC LIMIT 1) s ON true;
