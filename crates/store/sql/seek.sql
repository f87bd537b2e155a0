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
SELECT * FROM regent_seek($1, $2, $3, $4, $5)

-- name: partition_exists
-- Whether the queue has the partition.
-- $1 queue id, $2 partition name
SELECT 1 FROM partitions WHERE queue_id = $1 AND name = $2

-- name: delete_group
-- Deletes the group's cursors, with their leases, on the tenant's queues (one, or all); with
-- $4, also its stored start points, so the group's next pop starts it afresh from that pop's
-- subscription. Its dead letters stay: they are records of what happened.
-- $1 tenant, $2 consumer group, $3 queue (NULL: every queue), $4 forget the start points
SELECT * FROM regent_delete_group($1, $2, $3, $4)

-- name: delete_group_stats
-- The deleted group out of the stats snapshot as well, so it leaves the listing at once (a
-- round running now may list it again until the next one: it counted the cursors deleted).
-- $1 tenant, $2 consumer group, $3 queue (NULL: every queue)
DELETE FROM group_stats
 WHERE consumer_group = $2
   AND queue_id IN (SELECT id FROM queues WHERE tenant = $1 AND ($3::text IS NULL OR name = $3))
