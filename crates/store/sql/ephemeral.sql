-- Ephemeral queues (crate::ephemeral). Statements still inline in ephemeral.rs move here as
-- they change. The three removals delete some of one queue's messages and return what each
-- freed (crate::ephemeral::remove counts them); each takes four parameters so one caller runs
-- them all.

-- name: expire
-- The queue's messages older than $3 seconds.
-- $1 tenant, $2 queue, $3 ttl seconds, $4 true
DELETE FROM ephemeral_messages m
 WHERE m.tenant = $1 AND m.queue = $2
   AND m.enqueued_at <= now() - make_interval(secs => $3::bigint) AND $4::bool
RETURNING m.seq, m.bytes

-- name: drop_oldest
-- The queue's oldest messages, until at least $3 messages and $4 bytes are gone: a message
-- goes when what the messages before it free is not yet enough (the shortest prefix that
-- frees both).
-- $1 tenant, $2 queue, $3 messages, $4 bytes
DELETE FROM ephemeral_messages m
 WHERE m.tenant = $1 AND m.queue = $2
   AND m.seq IN (SELECT seq FROM (
                   SELECT seq, row_number() OVER w - 1 AS before_n,
                          coalesce(sum(bytes) OVER w, 0) - bytes AS before_bytes
                     FROM ephemeral_messages WHERE tenant = $1 AND queue = $2
                   WINDOW w AS (ORDER BY seq ROWS UNBOUNDED PRECEDING)) o
                  WHERE o.before_n < $3::bigint OR o.before_bytes < $4::bigint)
RETURNING m.seq, m.bytes

-- name: trim
-- The queue's messages every remembered group is past: handed, and not held by a delivery.
-- $1 tenant, $2 queue, $3 true, $4 true
DELETE FROM ephemeral_messages m
 WHERE m.tenant = $1 AND m.queue = $2
   AND m.seq < (SELECT min(least(coalesce(c.next_seq, 0),
                                 coalesce((SELECT min(d.seq) FROM ephemeral_deliveries d
                                            WHERE d.tenant = $1 AND d.queue = $2 AND d.grp = g.grp
                                              AND d.partition = m.partition), m.seq + 1)))
                  FROM ephemeral_groups g
                  LEFT JOIN ephemeral_cursors c
                         ON c.tenant = $1 AND c.queue = $2 AND c.grp = g.grp
                        AND c.partition = m.partition
                 WHERE g.tenant = $1 AND g.queue = $2) AND $3::bool AND $4::bool
RETURNING m.seq, m.bytes
