-- The tenant-wide inspection figures (crate::overview): the overview and the namespace and
-- task roll-ups, read from the stats snapshot (queue_stats, written by crate::stats); the
-- partition listing, counted when asked; the live leases and the dead letters of the filtered
-- queues. Each `-- name:` section is one statement, exactly as sent (crates/store/build.rs);
-- one marked `-- variant of: <name>` differs from that one only in lines that end with
-- `-- (variant)`. A filter (crate::series::Filter) is $2 queue, $3 namespace, $4 task, each
-- NULL for any.

-- name: overview
-- The tenant's queues the filter lets through (`counted`: each with its row of the stats
-- snapshot, NULL columns for a queue no round has counted yet), and over them: how many
-- queues, namespaces and tasks, the message counts and dead letters summed, each lag's spread
-- over every counted cursor (from the queues' spreads: the average weighted by cursors, the
-- least minimum, the greatest maximum, and for the median the cursor-weighted median of the
-- queues' medians, exact for one queue), and the age in seconds of the oldest counted row
-- (NULL when none is counted).
-- $1 tenant, $2 queue, $3 namespace, $4 task
WITH counted AS (
       SELECT q.namespace, q.task, s.partitions, s.total, s.pending, s.processing,
              s.completed, s.failed, s.dead_letters, s.cursors, s.refreshed_at,
              s.time_lag_avg, s.time_lag_median, s.time_lag_min, s.time_lag_max,
              s.offset_lag_avg, s.offset_lag_median, s.offset_lag_min, s.offset_lag_max
         FROM queues q LEFT JOIN queue_stats s ON s.queue_id = q.id
        WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
          AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4))
SELECT count(*) AS queues,
       count(DISTINCT namespace) FILTER (WHERE namespace <> '') AS namespaces,
       count(DISTINCT task) FILTER (WHERE task <> '') AS tasks,
       coalesce(sum(partitions), 0)::bigint AS partitions,
       coalesce(sum(total), 0)::bigint AS total,
       coalesce(sum(pending), 0)::bigint AS pending,
       coalesce(sum(processing), 0)::bigint AS processing,
       coalesce(sum(completed), 0)::bigint AS completed,
       coalesce(sum(failed), 0)::bigint AS failed,
       coalesce(sum(dead_letters), 0)::bigint AS dead_letters,
       coalesce(sum(time_lag_avg * cursors) / nullif(sum(cursors), 0), 0) AS time_lag_avg,
       coalesce(min(time_lag_min) FILTER (WHERE cursors > 0), 0) AS time_lag_min,
       coalesce(max(time_lag_max) FILTER (WHERE cursors > 0), 0) AS time_lag_max,
       coalesce((SELECT m FROM (
                   SELECT time_lag_median AS m,
                          sum(cursors) OVER (ORDER BY time_lag_median ROWS UNBOUNDED PRECEDING)
                            AS run,
                          sum(cursors) OVER () AS n
                     FROM counted WHERE cursors > 0) w
                  WHERE 2 * run >= n ORDER BY m LIMIT 1), 0) AS time_lag_median,
       coalesce(sum(offset_lag_avg * cursors) / nullif(sum(cursors), 0), 0) AS offset_lag_avg,
       coalesce(min(offset_lag_min) FILTER (WHERE cursors > 0), 0) AS offset_lag_min,
       coalesce(max(offset_lag_max) FILTER (WHERE cursors > 0), 0) AS offset_lag_max,
       coalesce((SELECT m FROM (
                   SELECT offset_lag_median AS m,
                          sum(cursors) OVER (ORDER BY offset_lag_median
                                             ROWS UNBOUNDED PRECEDING) AS run,
                          sum(cursors) OVER () AS n
                     FROM counted WHERE cursors > 0) w
                  WHERE 2 * run >= n ORDER BY m LIMIT 1), 0) AS offset_lag_median,
       extract(epoch FROM now() - min(refreshed_at))::float8 AS stats_age
  FROM counted

-- name: rollup
-- A page of the namespaces (or with $4, the tasks) of the tenant's queues, by name, each with its queues and the
-- partitions and message counts of its queues' stats rows summed (a queue no round has
-- counted yet adds to `queues` only); queues without one are not listed.
-- $1 tenant, $2 limit, $3 offset, $4 by task instead of namespace
WITH counted AS (
       SELECT q.namespace, q.task, s.partitions, s.total, s.pending, s.processing,
              s.completed, s.failed, s.dead_letters, s.cursors, s.refreshed_at,
              s.time_lag_avg, s.time_lag_median, s.time_lag_min, s.time_lag_max,
              s.offset_lag_avg, s.offset_lag_median, s.offset_lag_min, s.offset_lag_max
         FROM queues q LEFT JOIN queue_stats s ON s.queue_id = q.id
        WHERE q.tenant = $1 AND CASE WHEN $4 THEN q.task ELSE q.namespace END <> '')
SELECT CASE WHEN $4 THEN task ELSE namespace END AS label, count(*) AS queues,
       coalesce(sum(partitions), 0)::bigint AS partitions,
       coalesce(sum(total), 0)::bigint AS total,
       coalesce(sum(pending), 0)::bigint AS pending,
       coalesce(sum(processing), 0)::bigint AS processing,
       coalesce(sum(completed), 0)::bigint AS completed,
       coalesce(sum(failed), 0)::bigint AS failed
  FROM counted GROUP BY 1 ORDER BY 1 LIMIT $2 OFFSET $3

-- name: partitions_count
-- How many partitions the tenant has (of one queue, or of all): partitions_page's total.
-- $1 tenant, $2 queue name (NULL: every queue)
SELECT count(*) AS n FROM queues q JOIN partitions p ON p.queue_id = q.id
 WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)

-- name: partitions_page
-- A page of the tenant's partitions (of one queue, or of all), by queue and name, each with
-- its counts counted now: `total` kept, `pending` after the furthest-behind cursor,
-- `processing` under live leases, `completed` up to the furthest-ahead cursor, `failed` 1
-- while a group's next message waits for the retry of a nack (the same expressions as
-- stats::recount's `per` and queues::partition_stats, which crate::sql's tests hold them to).
-- The page is chosen before anything is counted.
-- $1 tenant, $2 queue name (NULL: every queue), $3 limit, $4 offset
WITH page AS (
       SELECT p.id FROM queues q JOIN partitions p ON p.queue_id = q.id
        WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
        ORDER BY q.name, p.name LIMIT $3 OFFSET $4)
SELECT p.id, q.name AS queue, q.namespace, q.task, p.name, p.created_at, p.last_push_at,
       p.next_offset - p.first_offset AS total,
       p.next_offset - 1 - coalesce(min(c.committed), p.first_offset - 1) AS pending,
       coalesce(max(c.lease_end - c.committed)
                FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()), 0)
         AS processing,
       greatest(coalesce(max(c.committed), p.first_offset - 1) + 1 - p.first_offset, 0)
         AS completed,
       (CASE WHEN bool_or(c.retry_count > 0) THEN 1 ELSE 0 END)::bigint AS failed
  FROM queues q
  JOIN partition_heads p ON p.queue_id = q.id
  LEFT JOIN cursor_state c ON c.partition_id = p.id
 WHERE q.tenant = $1 AND p.id IN (SELECT id FROM page)
 GROUP BY p.id, p.name, p.created_at, p.last_push_at, p.next_offset, p.first_offset,
          q.name, q.namespace, q.task
 ORDER BY q.name, p.name

-- name: leases
-- The live leases on the filtered queues' cursors: how many, over how many partitions, and
-- the messages under them.
-- $1 tenant, $2 queue, $3 namespace, $4 task
SELECT count(DISTINCT c.lease_id) AS active, count(DISTINCT c.partition_id) AS parts,
       coalesce(sum(c.lease_end - c.committed), 0)::bigint AS messages
  FROM cursor_state c JOIN queues q ON q.id = c.queue_id
 WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
   AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4)
   AND c.lease_id IS NOT NULL AND c.lease_expires_at > now()

-- name: dead_letters
-- The filtered queues' dead letters: how many, over how many partitions.
-- $1 tenant, $2 queue, $3 namespace, $4 task
SELECT count(*) AS total, count(DISTINCT d.partition_id) AS parts
  FROM dead_letters d JOIN queues q ON q.id = d.queue_id
 WHERE d.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
   AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4)

-- name: dead_letter_errors
-- The filtered queues' commonest dead-letter reasons, at most five, each with how many.
-- $1 tenant, $2 queue, $3 namespace, $4 task
SELECT d.error, count(*) AS n
  FROM dead_letters d JOIN queues q ON q.id = d.queue_id
 WHERE d.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
   AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4)
 GROUP BY d.error ORDER BY n DESC, d.error LIMIT 5
