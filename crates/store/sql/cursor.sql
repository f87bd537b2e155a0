-- A consumer group's cursor on a partition, as acks see it (crate::cursor): its turn taken
-- (regent_cursor_locked), read with the offsets of the transaction ids being acked, and
-- moved by appending its next state (V21: the newest `cursor_log` row is the state). The
-- caller checks the lease on the state read under its turn, in the transaction that moves
-- it: the lease is a fencing token, never a separate pre-check.
--
-- Transaction ids are resolved to offsets through the index, keyed by hash: on one
-- PostgreSQL the partition is inside the hash; on Citus (the _citus variants) the partition
-- is named too, so its index rows are found on its shard.

-- name: lock_and_resolve
-- Takes the cursor's turn and reads it, and resolves the transaction ids, in one round trip
-- (`offsets`: in the order of $4, NULL where one resolves nowhere); the queue's options and
-- the partition's end say whether an ended lease leaves the group something to claim.
-- $1 partition id (as text), $2 consumer group, $3 tenant, $4 the index hashes
SELECT c.*,
       ARRAY(SELECT x."offset"
               FROM unnest($4::uuid[]) WITH ORDINALITY AS w(hash, ord)
               LEFT JOIN tx_index x ON x.hash = w.hash
              ORDER BY w.ord) AS offsets
  FROM regent_cursor_locked($1::text::uuid, $2, $3) c

-- name: lock_and_resolve_citus
-- variant of: lock_and_resolve
-- $1-$4 as lock_and_resolve
SELECT c.*,
       ARRAY(SELECT x."offset"
               FROM unnest($4::uuid[]) WITH ORDINALITY AS w(hash, ord)
               LEFT JOIN tx_index x ON x.hash = w.hash
                AND x.partition_id = $1::text::uuid -- (variant)
              ORDER BY w.ord) AS offsets
  FROM regent_cursor_locked($1::text::uuid, $2, $3) c

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
-- Moves the cursor whose turn this transaction holds, sets its retry count, and releases its
-- lease when told to.
-- $1 partition id, $2 consumer group, $3 committed offset, $4 retry count, $5 whether to
-- release the lease
SELECT regent_cursor_next($1, $2, seq, $3, CASE WHEN $5 THEN NULL ELSE lease_id END,
                          lease_expires_at, lease_end, $4)
  FROM regent_cursor_turn($1, $2, false)

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
SELECT committed, lease_end FROM cursor_state
 WHERE partition_id = $1 AND lease_id IS NOT NULL AND lease_expires_at > now()
   AND lease_end IS NOT NULL

-- name: owner
-- The tenant a partition belongs to (its id as the client sent it).
-- $1 partition id (text)
SELECT tenant FROM partitions WHERE id = $1::text::uuid

-- name: complete_in_lease
-- Acks that complete within their live leases, in one statement that is its own transaction:
-- each (partition, group, lease, lowest, highest) whose cursor still holds its lease live with
-- every offset inside it and above the cursor moves the cursor to `highest`, releasing the
-- lease and restoring the retry budget once the lease's range is done; returns what each
-- moved cursor was, by the completion's ordinal. The tenant's partitions only. Every turn is
-- taken in the global lock order (each cursor found by its primary key, a lateral subquery
-- that locks, which the planner cannot flatten), and every move appended from the state the
-- statement's snapshot saw: a cursor whose state changed after it meets the newer row and is
-- not moved ("A stale read loses", sql/functions.sql). What is not moved is left to the full
-- path, which reads the state under its turn.
-- $1 tenant, $2 partition ids, $3 consumer groups, $4 lease ids, $5 lowest offsets,
-- $6 highest offsets (pairwise)
WITH a AS MATERIALIZED (
       SELECT * FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::bigint[], $6::bigint[])
                     WITH ORDINALITY AS a(pid, grp, lease, lowest, highest, k)),
     t AS MATERIALIZED (
       SELECT a.k
         FROM (SELECT * FROM a ORDER BY a.pid, a.grp) a
        CROSS JOIN LATERAL (
              SELECT 1 FROM cursors c JOIN partitions p ON p.id = c.partition_id
               WHERE c.partition_id = a.pid AND c.consumer_group = a.grp AND p.tenant = $1
                 FOR UPDATE OF c) c),
     s AS MATERIALIZED (
       SELECT a.k, a.pid, a.grp, a.highest, s.seq, s.committed, s.lease_id,
              s.lease_expires_at, s.lease_end, s.retry_count, p.queue_id, p.next_offset,
              q.name, q.options
         FROM a
         JOIN t ON t.k = a.k
         JOIN cursor_state s ON s.partition_id = a.pid AND s.consumer_group = a.grp
         JOIN partition_heads p ON p.id = s.partition_id
         JOIN queues q ON q.id = p.queue_id
        WHERE s.lease_id = a.lease AND s.lease_expires_at > now()
          AND s.committed < a.lowest AND s.lease_end >= a.highest),
     ins AS (
       INSERT INTO cursor_log (partition_id, consumer_group, seq, committed, lease_id,
                               lease_expires_at, lease_end, retry_count)
       SELECT s.pid, s.grp, s.seq + 1, s.highest,
              CASE WHEN s.lease_end <= s.highest THEN NULL ELSE s.lease_id END,
              s.lease_expires_at, s.lease_end,
              CASE WHEN s.lease_end <= s.highest THEN 0 ELSE s.retry_count END
         FROM s
        WHERE regent_read_in_time()
       ON CONFLICT DO NOTHING
       RETURNING partition_id, consumer_group)
SELECT s.k, s.committed, s.lease_end, s.retry_count, s.queue_id, s.name AS queue, s.options,
       s.next_offset
  FROM s JOIN ins ON ins.partition_id = s.pid AND ins.consumer_group = s.grp

-- name: complete_in_lease_citus
-- complete_in_lease on Citus, one cursor at a time (regent_complete_in_lease_each).
-- $1-$6 as complete_in_lease
SELECT * FROM regent_complete_in_lease_each($1, $2, $3, $4, $5, $6)
