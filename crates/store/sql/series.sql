-- The per-minute series of each queue (crate::series, table `queue_minutes`): what brokers
-- counted, added to the current minute's row, read back summed over spans and buckets, and
-- expired in bounded batches. Each `-- name:` section is one statement, exactly as sent
-- (crates/store/build.rs); one marked `-- variant of: <name>` differs from that one only in
-- lines that end with `-- (variant)`; a `_citus` statement is the Citus layout's in place of
-- the one without the suffix. A filter (crate::series::Filter) is $2 queue, $3 namespace, $4
-- task, each NULL for any.

-- name: add
-- Adds each queue's counts to its row of the current minute. Queues deleted meanwhile are
-- skipped; rows are written in queue order, so brokers flushing at once cannot deadlock. The
-- longest wait is the longer of the row's and the added one.
-- $1 queue ids, and aligned with them: $2 pushed, $3 delivered, $4 completed, $5 failed,
-- $6 dead-lettered, $7 expired, $8 sum of waits (ms), $9 longest wait (ms)
INSERT INTO queue_minutes AS m
       (queue_id, minute, pushed, delivered, completed, failed, dead_lettered, expired,
        lag_ms_sum, lag_ms_max)
SELECT u.q, date_trunc('minute', now()), u.p, u.d, u.c, u.f, u.l, u.e, u.ls, u.lm
  FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[],
              $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
       AS u(q, p, d, c, f, l, e, ls, lm)
 WHERE EXISTS (SELECT 1 FROM queues WHERE id = u.q)
 ORDER BY u.q
ON CONFLICT (queue_id, minute) DO UPDATE
   SET pushed = m.pushed + excluded.pushed,
       delivered = m.delivered + excluded.delivered,
       completed = m.completed + excluded.completed,
       failed = m.failed + excluded.failed,
       dead_lettered = m.dead_lettered + excluded.dead_lettered,
       expired = m.expired + excluded.expired,
       lag_ms_sum = m.lag_ms_sum + excluded.lag_ms_sum,
       lag_ms_max = greatest(m.lag_ms_max, excluded.lag_ms_max)

-- name: expire
-- Deletes up to $2 minutes older than $1: a bounded batch, so expiry never holds a long lock
-- (depth_history's expire_tenants and expire_queues do the same for their tables).
-- $1 before, $2 limit
DELETE FROM queue_minutes m
  USING (SELECT queue_id, minute FROM queue_minutes WHERE minute < $1 LIMIT $2) d
 WHERE m.queue_id = d.queue_id AND m.minute = d.minute

-- name: buckets
-- The filtered queues' counts per bucket of $7 minutes (aligned on $5) in [$5, $6), oldest
-- first; buckets with nothing counted are absent. Without $8, all queues together (`queue`
-- NULL); with $8, per queue (`queue` its name, then by name), only the $9 queues that counted
-- most in the window.
-- $1 tenant, $2 queue, $3 namespace, $4 task, $5 from, $6 to, $7 bucket minutes, $8 only the
-- busiest queues, $9 how many of them (crate::series::SERIES_QUEUES)
SELECT date_bin(make_interval(mins => $7), m.minute, $5) AS bucket,
       CASE WHEN $8 THEN q.name END AS queue,
       coalesce(sum(m.pushed), 0)::bigint AS pushed,
       coalesce(sum(m.delivered), 0)::bigint AS delivered,
       coalesce(sum(m.completed), 0)::bigint AS completed,
       coalesce(sum(m.failed), 0)::bigint AS failed,
       coalesce(sum(m.dead_lettered), 0)::bigint AS dead_lettered,
       coalesce(sum(m.expired), 0)::bigint AS expired,
       coalesce(sum(m.lag_ms_sum), 0)::bigint AS lag_ms_sum,
       coalesce(max(m.lag_ms_max), 0)::bigint AS lag_ms_max
  FROM queue_minutes m JOIN queues q ON q.id = m.queue_id
 WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
   AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4)
   AND m.minute >= $5 AND m.minute < $6
   AND (NOT $8 OR m.queue_id IN (
          SELECT m.queue_id FROM queue_minutes m JOIN queues q ON q.id = m.queue_id
           WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
             AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4)
             AND m.minute >= $5 AND m.minute < $6
           GROUP BY m.queue_id
           ORDER BY sum(m.pushed + m.delivered + m.completed + m.failed
                        + m.dead_lettered + m.expired) DESC, m.queue_id
           LIMIT $9))
 GROUP BY 1, 2 ORDER BY 1, 2

-- name: per_queue
-- Each filtered queue's counts over [$5, $6), with its labels and how many partitions it has,
-- by name (the first $7); queues with nothing counted included (zeros). The filtered queues'
-- partitions are counted first, every shard at once on Citus, which plans no correlated
-- subquery beside a reference table.
-- $1 tenant, $2 queue, $3 namespace, $4 task, $5 from, $6 to, $7 limit
-- (crate::series::STATUS_QUEUES)
SELECT q.id, q.name, q.namespace, q.task,
       coalesce(max(pc.n), 0)
         AS partitions,
       coalesce(sum(m.pushed), 0)::bigint AS pushed,
       coalesce(sum(m.delivered), 0)::bigint AS delivered,
       coalesce(sum(m.completed), 0)::bigint AS completed,
       coalesce(sum(m.failed), 0)::bigint AS failed,
       coalesce(sum(m.dead_lettered), 0)::bigint AS dead_lettered,
       coalesce(sum(m.expired), 0)::bigint AS expired,
       coalesce(sum(m.lag_ms_sum), 0)::bigint AS lag_ms_sum,
       coalesce(max(m.lag_ms_max), 0)::bigint AS lag_ms_max
  FROM queues q
  LEFT JOIN queue_minutes m ON m.queue_id = q.id AND m.minute >= $5 AND m.minute < $6
  LEFT JOIN (SELECT p.queue_id, count(*) AS n FROM partitions p
              WHERE p.queue_id IN (SELECT q.id FROM queues q WHERE q.tenant = $1
                       AND ($2::text IS NULL OR q.name = $2)
                       AND ($3::text IS NULL OR q.namespace = $3)
                       AND ($4::text IS NULL OR q.task = $4))
              GROUP BY p.queue_id) pc ON pc.queue_id = q.id
 WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
   AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4)
 GROUP BY q.id, q.name, q.namespace, q.task ORDER BY q.name LIMIT $7
