-- The backlog over time (crate::depth_history), as the stats rounds counted it: per tenant
-- every round (`depth_minutes`), and per queue only when its figures changed
-- (`queue_depth_minutes`, carried forward by the reader). A level, not a sum: a minute's row
-- is the last round of that minute, and a bucket of several minutes shows its latest minute.
-- Each `-- name:` section is one statement, exactly as sent (crates/store/build.rs).

-- name: record
-- Writes every tenant's totals from the snapshot the round just wrote (in its transaction):
-- the queue and group rows summed per tenant.
-- (no parameters)
INSERT INTO depth_minutes AS d (tenant, minute, pending, processing, dead_letters,
                                lag_messages, max_time_lag)
SELECT s.tenant, date_trunc('minute', now()), sum(s.pending)::bigint,
       sum(s.processing)::bigint, sum(s.dead_letters)::bigint,
       coalesce(sum(g.lag), 0)::bigint, max(s.time_lag_max)
  FROM queue_stats s
  JOIN queues q ON q.id = s.queue_id
  LEFT JOIN (SELECT queue_id, sum(lag) AS lag FROM group_stats GROUP BY queue_id) g
         ON g.queue_id = s.queue_id
 GROUP BY s.tenant
ON CONFLICT (tenant, minute) DO UPDATE SET
    pending = EXCLUDED.pending, processing = EXCLUDED.processing,
    dead_letters = EXCLUDED.dead_letters, lag_messages = EXCLUDED.lag_messages,
    max_time_lag = EXCLUDED.max_time_lag

-- name: record_queues
-- Writes a row for each of these queues (just recounted, in the round's transaction) whose
-- figures differ from its latest row: a queue that did not change writes nothing.
-- $1 queue ids
INSERT INTO queue_depth_minutes AS d (queue_id, minute, pending, processing,
                                      dead_letters, lag_messages)
SELECT s.queue_id, date_trunc('minute', now()), s.pending, s.processing,
       s.dead_letters, coalesce(g.lag, 0)
  FROM queue_stats s
  LEFT JOIN (SELECT queue_id, sum(lag)::bigint AS lag FROM group_stats
              WHERE queue_id = ANY($1) GROUP BY queue_id) g
         ON g.queue_id = s.queue_id
  LEFT JOIN LATERAL (
       SELECT l.pending, l.processing, l.dead_letters, l.lag_messages
         FROM queue_depth_minutes l WHERE l.queue_id = s.queue_id
        ORDER BY l.minute DESC LIMIT 1) last ON true
 WHERE s.queue_id = ANY($1)
   AND (last.pending, last.processing, last.dead_letters, last.lag_messages)
       IS DISTINCT FROM (s.pending, s.processing, s.dead_letters, coalesce(g.lag, 0))
ON CONFLICT (queue_id, minute) DO UPDATE SET
    pending = EXCLUDED.pending, processing = EXCLUDED.processing,
    dead_letters = EXCLUDED.dead_letters, lag_messages = EXCLUDED.lag_messages

-- name: read_queue
-- One queue's backlog over [$2, $3), newest first: a point per bucket with a row in it (its
-- latest), and, when the queue's latest row before $2 is older, that row as of $2 (the figures
-- held since). `max_time_lag` is not kept per queue: 0.
-- $1 queue id, $2 from, $3 to, $4 bucket minutes
SELECT * FROM (
   SELECT DISTINCT ON (bucket)
          date_bin(make_interval(mins => $4), minute, $2) AS bucket,
          pending, processing, dead_letters, lag_messages, 0::float8 AS max_time_lag
     FROM queue_depth_minutes
    WHERE queue_id = $1 AND minute >= $2 AND minute < $3
    ORDER BY bucket DESC, minute DESC) w
UNION ALL
SELECT * FROM (
   SELECT $2::timestamptz, pending, processing, dead_letters, lag_messages, 0::float8
     FROM queue_depth_minutes
    WHERE queue_id = $1 AND minute < $2
    ORDER BY minute DESC LIMIT 1) b
ORDER BY bucket DESC

-- name: read
-- The tenant's backlog over [$2, $3), a point per bucket of $4 minutes with a round in it (its
-- latest minute's), newest first.
-- $1 tenant, $2 from, $3 to, $4 bucket minutes
SELECT DISTINCT ON (bucket) date_bin(make_interval(mins => $4), minute, $2) AS bucket,
       pending, processing, dead_letters, lag_messages, max_time_lag
  FROM depth_minutes
 WHERE tenant = $1 AND minute >= $2 AND minute < $3
 ORDER BY bucket DESC, minute DESC

-- name: expire_tenants
-- Deletes up to $2 of the tenants' minutes older than $1: a bounded batch, as
-- series::expire.
-- $1 before, $2 limit
DELETE FROM depth_minutes m
  USING (SELECT tenant, minute FROM depth_minutes WHERE minute < $1 LIMIT $2) d
 WHERE m.tenant = d.tenant AND m.minute = d.minute

-- name: expire_queues
-- The same for the queues' minutes.
-- $1 before, $2 limit
DELETE FROM queue_depth_minutes m
  USING (SELECT queue_id, minute FROM queue_depth_minutes WHERE minute < $1 LIMIT $2) d
 WHERE m.queue_id = d.queue_id AND m.minute = d.minute
