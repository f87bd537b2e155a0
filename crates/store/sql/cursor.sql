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
