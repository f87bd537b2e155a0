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
-- Acks that complete within their live leases, in one statement (regent_complete_in_lease):
-- each (partition, group, lease, lowest, highest) whose cursor still holds its lease live with
-- every offset inside it and above the cursor moves the cursor to `highest`, releasing the
-- lease and restoring the retry budget once the lease's range is done; returns what each
-- moved cursor was, by the completion's ordinal. The tenant's partitions only.
-- $1 tenant, $2 partition ids, $3 consumer groups, $4 lease ids, $5 lowest offsets,
-- $6 highest offsets (pairwise)
SELECT * FROM regent_complete_in_lease($1, $2, $3, $4, $5, $6)

-- name: complete_in_lease_citus
-- complete_in_lease on Citus, one cursor at a time (regent_complete_in_lease_each).
-- $1-$6 as complete_in_lease
SELECT * FROM regent_complete_in_lease_each($1, $2, $3, $4, $5, $6)
