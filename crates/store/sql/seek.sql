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
