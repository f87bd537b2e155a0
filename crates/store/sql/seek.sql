-- Moving a group's cursors (crate::seek).

-- name: seek
-- Moves the group's cursors on a queue's partitions (one named, or all) to the end, or to
-- after the last segment appended at or before $4 (before the first offset the log still
-- holds, when retention deleted those). The lease is released as an expiry releases it (no
-- retry charged, and acks under it are refused from now on); the retry budget starts again,
-- as for a completed batch; nothing is leased past the new cursor. A cursor moved back makes
-- its partition claimable at once: claims only ask whether the cursor is behind the
-- partition's end. Each moved cursor answers the time its new last message was appended.
-- $1 queue id, $2 consumer group, $3 to the end, $4 the instant (when not to the end),
-- $5 partition name (NULL: every partition)
WITH t AS (
       SELECT p.id,
              CASE WHEN $3::bool THEN p.next_offset - 1
                   ELSE greatest(coalesce((SELECT max(g.end_offset) FROM segments g
                                            WHERE g.partition_id = p.id
                                              AND g.created_at <= $4::timestamptz), -1),
                                 p.first_offset - 1)
              END AS target
         FROM partitions p
        WHERE p.queue_id = $1 AND ($5::text IS NULL OR p.name = $5))
UPDATE cursors c
   SET committed = t.target, lease_end = t.target, lease_id = NULL,
       lease_expires_at = least(c.lease_expires_at, now()), retry_count = 0
  FROM t
 WHERE c.partition_id = t.id AND c.consumer_group = $2
RETURNING (SELECT g.created_at FROM segments g
            WHERE g.partition_id = t.id AND g.end_offset >= t.target AND t.target >= 0
            ORDER BY g.end_offset LIMIT 1) AS appended_at

-- name: partition_exists
-- Whether the queue has the partition.
-- $1 queue id, $2 partition name
SELECT 1 FROM partitions WHERE queue_id = $1 AND name = $2

-- name: delete_group
-- Deletes the group's cursors, with their leases, on the tenant's queues (one, or all); with
-- $4, also its stored start points, so the group's next pop starts it afresh from that pop's
-- subscription. Its dead letters stay: they are records of what happened.
-- $1 tenant, $2 consumer group, $3 queue (NULL: every queue), $4 forget the start points
WITH q AS (SELECT id FROM queues WHERE tenant = $1 AND ($3::text IS NULL OR name = $3)),
     c AS (DELETE FROM cursors WHERE consumer_group = $2
             AND queue_id IN (SELECT id FROM q) RETURNING queue_id),
     s AS (DELETE FROM subscriptions WHERE $4 AND consumer_group = $2
             AND queue_id IN (SELECT id FROM q) RETURNING 1)
SELECT (SELECT count(*) FROM c) AS cursors,
       ARRAY(SELECT DISTINCT queue_id FROM c) AS queues

-- name: delete_group_stats
-- The deleted group out of the stats snapshot as well, so it leaves the listing at once (a
-- round running now may list it again until the next one: it counted the cursors deleted).
-- $1 tenant, $2 consumer group, $3 queue (NULL: every queue)
DELETE FROM group_stats
 WHERE consumer_group = $2
   AND queue_id IN (SELECT id FROM queues WHERE tenant = $1 AND ($3::text IS NULL OR name = $3))
