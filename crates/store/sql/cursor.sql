-- A consumer group's cursor on a partition, as acks see it (crate::cursor): locked, read with
-- the offsets of the transaction ids being acked, and written back. The cursor row is locked
-- first and the caller checks the lease on that locked row in the transaction that moves it:
-- the lease is a fencing token, never a separate pre-check.
--
-- Transaction ids are resolved to offsets through the index, keyed by hash: on one
-- PostgreSQL the partition is inside the hash; on Citus (the _citus variants) the partition
-- is named too, so its index rows are found on its shard.

-- name: lock_and_resolve
-- Locks the cursor row and resolves the transaction ids in one round trip (`offsets`: in the
-- order of $4, NULL where one resolves nowhere); the queue's options and the partition's end
-- say whether an ended lease leaves the group something to claim.
-- $1 partition id (as text), $2 consumer group, $3 tenant, $4 the index hashes
SELECT c.committed, c.lease_id,
       (c.lease_id IS NOT NULL AND c.lease_expires_at > now()) AS live, c.lease_end,
       c.retry_count, q.options, q.id AS queue_id, q.name AS queue, p.id AS partition_id,
       p.next_offset,
       ARRAY(SELECT x."offset"
               FROM unnest($4::uuid[]) WITH ORDINALITY AS w(hash, ord)
               LEFT JOIN tx_index x ON x.hash = w.hash
              ORDER BY w.ord) AS offsets
  FROM cursors c
  JOIN partitions p ON p.id = c.partition_id
  JOIN queues q ON q.id = p.queue_id
 WHERE c.partition_id = $1::text::uuid AND c.consumer_group = $2 AND p.tenant = $3
   FOR UPDATE OF c

-- name: lock_and_resolve_citus
-- variant of: lock_and_resolve
-- $1-$4 as lock_and_resolve
SELECT c.committed, c.lease_id,
       (c.lease_id IS NOT NULL AND c.lease_expires_at > now()) AS live, c.lease_end,
       c.retry_count, q.options, q.id AS queue_id, q.name AS queue, p.id AS partition_id,
       p.next_offset,
       ARRAY(SELECT x."offset"
               FROM unnest($4::uuid[]) WITH ORDINALITY AS w(hash, ord)
               LEFT JOIN tx_index x ON x.hash = w.hash
                AND x.partition_id = $1::text::uuid -- (variant)
              ORDER BY w.ord) AS offsets
  FROM cursors c
  JOIN partitions p ON p.id = c.partition_id
  JOIN queues q ON q.id = p.queue_id
 WHERE c.partition_id = $1::text::uuid AND c.consumer_group = $2 AND p.tenant = $3
   FOR UPDATE OF c

-- name: resolve
-- lock_and_resolve's resolution on its own.
-- $1 the index hashes
SELECT ARRAY(SELECT x."offset"
               FROM unnest($1::uuid[]) WITH ORDINALITY AS w(hash, ord)
               LEFT JOIN tx_index x ON x.hash = w.hash
              ORDER BY w.ord) AS offsets

-- name: resolve_citus
-- variant of: resolve
-- $1 the index hashes, $2 partition id
SELECT ARRAY(SELECT x."offset"
               FROM unnest($1::uuid[]) WITH ORDINALITY AS w(hash, ord)
               LEFT JOIN tx_index x ON x.hash = w.hash
                AND x.partition_id = $2 -- (variant)
              ORDER BY w.ord) AS offsets

-- name: write
-- Moves the cursor, sets its retry count, and releases its lease when told to.
-- $1 partition id, $2 consumer group, $3 committed offset, $4 retry count, $5 whether to
-- release the lease
UPDATE cursors
   SET committed = $3, retry_count = $4,
       lease_id = CASE WHEN $5 THEN NULL ELSE lease_id END
 WHERE partition_id = $1 AND consumer_group = $2

-- name: in_range
-- The partition's segments holding offsets ($2, $3] (a live lease's range), in order: what an
-- ack inside its lease falls back to when the index no longer holds a transaction id (every
-- frame carries its transaction id, so no window limits it).
-- $1 partition id, $2 after, $3 up to
SELECT base_offset, frames FROM segments
 WHERE partition_id = $1 AND end_offset > $2 AND base_offset <= $3
 ORDER BY end_offset

-- name: live_leases
-- The live leases on the partition: each cursor's committed offset and lease end.
-- $1 partition id
SELECT committed, lease_end FROM cursors
 WHERE partition_id = $1 AND lease_id IS NOT NULL AND lease_expires_at > now()
   AND lease_end IS NOT NULL

-- name: owner
-- The tenant a partition belongs to (its id as the client sent it).
-- $1 partition id (text)
SELECT tenant FROM partitions WHERE id = $1::text::uuid

-- name: complete_in_lease
-- Acks that complete within their live leases, in one statement: each (partition, group,
-- lease, lowest, highest) whose cursor row still holds its lease live with every offset inside
-- it and above the cursor moves the cursor to `highest`, releasing the lease and restoring the
-- retry budget once the lease's range is done; returns what each moved cursor was, by the
-- completion's ordinal. The tenant's partitions only. Each cursor is found by its primary key,
-- one completion after another in the global lock order (partition, group): a lateral
-- subquery that locks, which the planner cannot flatten. Joined as a whole, the planner read
-- every live lease of every queue through the claim-order index (`lease_expires_at > now()`)
-- and hashed them: with the xmin horizon held, every version of every cursor, 130 buffers and
-- more per ack (BENCHMARKS.md, "throughput with the xmin horizon held").
-- $1 tenant, $2 partition ids, $3 consumer groups, $4 lease ids, $5 lowest offsets,
-- $6 highest offsets (pairwise)
WITH a AS (
       SELECT * FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::bigint[], $6::bigint[])
              WITH ORDINALITY AS a(pid, grp, lease, lowest, highest, k)
        ORDER BY pid, grp),
     old AS (
       SELECT a.k, a.highest, c.partition_id, c.consumer_group, c.committed, c.lease_end,
              c.retry_count, c.queue_id, q.name AS queue, q.options, c.next_offset
         FROM a
        CROSS JOIN LATERAL (
              SELECT c.partition_id, c.consumer_group, c.committed, c.lease_end,
                     c.retry_count, p.queue_id, p.next_offset
                FROM cursors c
                JOIN partitions p ON p.id = c.partition_id AND p.tenant = $1
               WHERE c.partition_id = a.pid AND c.consumer_group = a.grp
                 AND c.lease_id = a.lease AND c.lease_expires_at > now()
                 AND c.committed < a.lowest AND c.lease_end >= a.highest
                 FOR UPDATE OF c) c
         JOIN queues q ON q.id = c.queue_id)
   UPDATE cursors c
      SET committed = old.highest,
          lease_id = CASE WHEN old.lease_end <= old.highest THEN NULL ELSE c.lease_id END,
          retry_count = CASE WHEN old.lease_end <= old.highest THEN 0 ELSE c.retry_count END
     FROM old
    WHERE c.partition_id = old.partition_id AND c.consumer_group = old.consumer_group
RETURNING old.k, old.committed, old.lease_end, old.retry_count, old.queue_id, old.queue,
          old.options, old.next_offset
