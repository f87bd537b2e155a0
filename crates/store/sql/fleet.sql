-- The fleet's samples (crate::fleet, tables `broker_samples` and `broker_parked`): what each
-- broker measured of itself every few seconds, with the pops it had parked per queue, written
-- by that broker and read back by any, bucketed here (`date_bin`, buckets aligned on UTC
-- midnight of 2000-01-01, so a bucket's start is a multiple of its width); and the tenant's
-- per-queue activity of a window, from the queue series. Each `-- name:` section is one
-- statement, exactly as sent (crates/store/build.rs). A window (crate::fleet::Window) is $1
-- from, $2 to (both included), $3 bucket minutes; in system and fleet $4 hostname and $5
-- broker id as text, each NULL for any. Column names are read back by name (crate::fleet's
-- Gauge, Cpu and ops), and a unit test there holds system, fleet and recent to the gauges and
-- counters it reads.

-- name: record
-- Writes one sample, stamped with the database's clock (the one every broker shares), and its
-- parked counts with it, in one statement, under its instant.
-- $1 broker id, $2 hostname, $3 port, $4 interval ms, $5 CPU user µs, $6 CPU system µs,
-- $7 resident bytes, $8 virtual bytes, $9 pool size, $10 pool open, $11 pool idle, $12 pool
-- waiting, $13-$20 requests and messages of push, pop, ack, transaction, $21 pending
-- handovers, $22 runtime map sizes (JSON object), $23 tenants, $24 queues and $25 parked pops
-- (aligned arrays, one element a parked queue)
WITH s AS (
       INSERT INTO broker_samples
              (broker_id, sampled_at, hostname, port, interval_ms, cpu_user_us,
               cpu_system_us, rss_bytes, virtual_bytes, pool_size, pool_open, pool_idle,
               pool_waiting, push_requests, push_messages, pop_requests, pop_messages,
               ack_requests, ack_messages, transaction_requests, transaction_messages,
               pending_handovers, runtime_entries)
       VALUES ($1, now(), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
               $16, $17, $18, $19, $20, $21, $22)
       RETURNING broker_id, sampled_at)
INSERT INTO broker_parked (tenant, sampled_at, broker_id, queue, parked)
SELECT p.tenant, s.sampled_at, s.broker_id, p.queue, p.parked
  FROM s, unnest($23::text[], $24::text[], $25::int4[]) AS p(tenant, queue, parked)

-- name: expire
-- Deletes up to $2 samples, oldest first, taken before $1; rows another broker is deleting at
-- the same moment are skipped, so brokers expiring together never wait on each other.
-- $1 before, $2 limit
DELETE FROM broker_samples b
 USING (SELECT broker_id, sampled_at FROM broker_samples
         WHERE sampled_at < $1
         ORDER BY sampled_at
         LIMIT $2
         FOR UPDATE SKIP LOCKED) d
 WHERE b.broker_id = d.broker_id AND b.sampled_at = d.sampled_at

-- name: expire_parked
-- The same for the samples' parked counts.
-- $1 before, $2 limit
DELETE FROM broker_parked b
 USING (SELECT tenant, sampled_at, broker_id, queue FROM broker_parked
         WHERE sampled_at < $1
         ORDER BY sampled_at
         LIMIT $2
         FOR UPDATE SKIP LOCKED) d
 WHERE (b.tenant, b.sampled_at, b.broker_id, b.queue)
     = (d.tenant, d.sampled_at, d.broker_id, d.queue)

-- name: system
-- Every broker's buckets of the window, by (hostname, port, broker), oldest bucket first. `s`
-- is the window's samples, each with its bucket, its CPU use as a percent of one core and the
-- pool's connections in use. Per bucket: the samples and the milliseconds they cover; for
-- CPU (user, system) the average over the time covered (not a mean of the samples' percents),
-- the extremes and latest of single samples, and the CPU time itself; every counter summed;
-- for each gauge its avg, min, max and latest (`gauges`: one row per gauge named in its
-- VALUES list, so each is aggregated by one expression), and each in-memory map's largest
-- and latest size (`maps`), both as arrays ordered by name.
-- $1 from, $2 to, $3 bucket minutes, $4 hostname, $5 broker id
WITH s AS (
       SELECT *,
              date_bin(make_interval(mins => $3), sampled_at,
                       TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
              cpu_user_us::float8 / greatest(interval_ms, 1) / 10 AS cpu_user_percent,
              cpu_system_us::float8 / greatest(interval_ms, 1) / 10 AS cpu_system_percent,
              pool_open - pool_idle AS pool_active
         FROM broker_samples
        WHERE sampled_at >= $1 AND sampled_at <= $2
          AND ($4::text IS NULL OR hostname = $4)
          AND ($5::text IS NULL OR broker_id::text = $5)),
     gauges AS (
       SELECT broker_id, bucket,
              array_agg(name ORDER BY name) AS gauge_names,
              array_agg(mean ORDER BY name) AS gauge_avg,
              array_agg(lowest ORDER BY name) AS gauge_min,
              array_agg(highest ORDER BY name) AS gauge_max,
              array_agg(latest ORDER BY name) AS gauge_last
         FROM (SELECT s.broker_id, s.bucket, g.name,
                      avg(g.value)::float8 AS mean, min(g.value) AS lowest,
                      max(g.value) AS highest,
                      (array_agg(g.value ORDER BY s.sampled_at DESC))[1] AS latest
                 FROM s CROSS JOIN LATERAL (VALUES
                        ('rss_bytes', s.rss_bytes::bigint),
                        ('virtual_bytes', s.virtual_bytes::bigint),
                        ('pool_size', s.pool_size::bigint),
                        ('pool_open', s.pool_open::bigint),
                        ('pool_active', s.pool_active::bigint),
                        ('pool_idle', s.pool_idle::bigint),
                        ('pool_waiting', s.pool_waiting::bigint),
                        ('pending_handovers', s.pending_handovers::bigint)) g(name, value)
                GROUP BY s.broker_id, s.bucket, g.name) per_gauge
        GROUP BY broker_id, bucket),
     maps AS (
       SELECT broker_id, bucket,
              array_agg(name ORDER BY name) AS map_names,
              array_agg(largest ORDER BY name) AS map_max,
              array_agg(latest ORDER BY name) AS map_last
         FROM (SELECT s.broker_id, s.bucket, e.key AS name,
                      max(e.value::bigint) AS largest,
                      (array_agg(e.value::bigint ORDER BY s.sampled_at DESC))[1] AS latest
                 FROM s, jsonb_each_text(s.runtime_entries) e
                GROUP BY s.broker_id, s.bucket, e.key) per_map
        GROUP BY broker_id, bucket)
SELECT s.broker_id, s.hostname, s.port, s.bucket,
       count(*) AS samples, sum(s.interval_ms)::bigint AS covered_ms,
       sum(cpu_user_us)::float8 / greatest(sum(interval_ms), 1) / 10 AS cpu_user_percent_avg,
       min(cpu_user_percent) AS cpu_user_percent_min,
       max(cpu_user_percent) AS cpu_user_percent_max,
       (array_agg(cpu_user_percent ORDER BY sampled_at DESC))[1] AS cpu_user_percent_last,
       sum(cpu_user_us)::bigint AS cpu_user_us,
       sum(cpu_system_us)::float8 / greatest(sum(interval_ms), 1) / 10 AS cpu_system_percent_avg,
       min(cpu_system_percent) AS cpu_system_percent_min,
       max(cpu_system_percent) AS cpu_system_percent_max,
       (array_agg(cpu_system_percent ORDER BY sampled_at DESC))[1] AS cpu_system_percent_last,
       sum(cpu_system_us)::bigint AS cpu_system_us,
       sum(push_requests)::bigint AS push_requests,
       sum(push_messages)::bigint AS push_messages,
       sum(pop_requests)::bigint AS pop_requests,
       sum(pop_messages)::bigint AS pop_messages,
       sum(ack_requests)::bigint AS ack_requests,
       sum(ack_messages)::bigint AS ack_messages,
       sum(transaction_requests)::bigint AS transaction_requests,
       sum(transaction_messages)::bigint AS transaction_messages,
       g.gauge_names, g.gauge_avg, g.gauge_min, g.gauge_max, g.gauge_last,
       m.map_names, m.map_max, m.map_last
  FROM s JOIN gauges g ON g.broker_id = s.broker_id AND g.bucket = s.bucket
  LEFT JOIN maps m ON m.broker_id = s.broker_id AND m.bucket = s.bucket
 GROUP BY s.broker_id, s.hostname, s.port, s.bucket, g.gauge_names, g.gauge_avg, g.gauge_min,
          g.gauge_max, g.gauge_last, m.map_names, m.map_max, m.map_last
 ORDER BY s.hostname, s.port, s.broker_id, s.bucket

-- name: fleet
-- The whole fleet (of the window's host and broker) per bucket, newest first: the brokers
-- that sampled in it, their samples and counters summed; open pool connections and requests
-- waiting for one, each broker's average summed over brokers, and the most one pool had
-- waiting in one sample; CPU use over the bucket, summed over brokers.
-- $1 from, $2 to, $3 bucket minutes, $4 hostname, $5 broker id
WITH s AS (
       SELECT *,
              date_bin(make_interval(mins => $3), sampled_at,
                       TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
              cpu_user_us::float8 / greatest(interval_ms, 1) / 10 AS cpu_user_percent,
              cpu_system_us::float8 / greatest(interval_ms, 1) / 10 AS cpu_system_percent,
              pool_open - pool_idle AS pool_active
         FROM broker_samples
        WHERE sampled_at >= $1 AND sampled_at <= $2
          AND ($4::text IS NULL OR hostname = $4)
          AND ($5::text IS NULL OR broker_id::text = $5)),
     per_broker AS (
       SELECT bucket, broker_id, count(*) AS samples,
              sum(push_requests)::bigint AS push_requests,
              sum(push_messages)::bigint AS push_messages,
              sum(pop_requests)::bigint AS pop_requests,
              sum(pop_messages)::bigint AS pop_messages,
              sum(ack_requests)::bigint AS ack_requests,
              sum(ack_messages)::bigint AS ack_messages,
              sum(transaction_requests)::bigint AS transaction_requests,
              sum(transaction_messages)::bigint AS transaction_messages,
              avg(pool_open)::float8 AS pool_open,
              avg(pool_waiting)::float8 AS avg_waiting,
              max(pool_waiting) AS max_waiting,
              sum(cpu_user_us + cpu_system_us)::float8
                / greatest(sum(interval_ms), 1) / 10 AS cpu_percent
         FROM s
        GROUP BY bucket, broker_id)
SELECT bucket, count(*) AS brokers, sum(samples)::bigint AS samples,
       sum(push_requests)::bigint AS push_requests,
       sum(push_messages)::bigint AS push_messages,
       sum(pop_requests)::bigint AS pop_requests,
       sum(pop_messages)::bigint AS pop_messages,
       sum(ack_requests)::bigint AS ack_requests,
       sum(ack_messages)::bigint AS ack_messages,
       sum(transaction_requests)::bigint AS transaction_requests,
       sum(transaction_messages)::bigint AS transaction_messages,
       sum(pool_open)::float8 AS db_connections,
       sum(avg_waiting)::float8 AS avg_waiting,
       max(max_waiting)::bigint AS max_waiting,
       sum(cpu_percent)::float8 AS cpu_percent
  FROM per_broker
 GROUP BY bucket
 ORDER BY bucket DESC

-- name: recent
-- Every broker that sampled since $1 (at most $2), by (hostname, port, broker): its latest
-- sample's instant, its samples and counters summed, CPU use over the span, and the latest
-- sample's figures.
-- $1 since, $2 limit
SELECT broker_id, hostname, port, max(sampled_at) AS last_seen, count(*) AS samples,
       sum(push_requests)::bigint AS push_requests,
       sum(push_messages)::bigint AS push_messages,
       sum(pop_requests)::bigint AS pop_requests,
       sum(pop_messages)::bigint AS pop_messages,
       sum(ack_requests)::bigint AS ack_requests,
       sum(ack_messages)::bigint AS ack_messages,
       sum(transaction_requests)::bigint AS transaction_requests,
       sum(transaction_messages)::bigint AS transaction_messages,
       sum(cpu_user_us + cpu_system_us)::float8
         / greatest(sum(interval_ms), 1) / 10 AS cpu_percent,
       (array_agg(rss_bytes ORDER BY sampled_at DESC))[1] AS rss_bytes,
       (array_agg(pool_open ORDER BY sampled_at DESC))[1] AS pool_open,
       (array_agg(pool_waiting ORDER BY sampled_at DESC))[1] AS pool_waiting,
       (array_agg(pending_handovers ORDER BY sampled_at DESC))[1] AS pending_handovers
  FROM broker_samples
 WHERE sampled_at >= $1
 GROUP BY broker_id, hostname, port
 ORDER BY hostname, port, broker_id
 LIMIT $2

-- name: queue_activity
-- The tenant's queues with activity in the minutes of [$2, $3], most delivered first (at most
-- $4), from the queue series.
-- $1 tenant, $2 from, $3 to, $4 limit
SELECT q.name,
       sum(m.pushed)::bigint AS pushed, sum(m.delivered)::bigint AS delivered,
       sum(m.completed)::bigint AS completed, sum(m.failed)::bigint AS failed,
       sum(m.dead_lettered)::bigint AS dead_lettered
  FROM queue_minutes m JOIN queues q ON q.id = m.queue_id
 WHERE q.tenant = $1
   AND m.minute >= date_trunc('minute', $2::timestamptz) AND m.minute <= $3
 GROUP BY q.id, q.name
 ORDER BY sum(m.delivered) DESC, q.name
 LIMIT $4

-- name: parked
-- The tenant's parked pops per (bucket, queue, broker) of the window, of one queue when given,
-- ordered by bucket, queue, hostname, port and broker: per queue its pops averaged over the
-- broker's samples of the bucket (a sample that does not name the queue had none parked) and
-- the most one sample counted. Only the tenant's rows are read (`p`); a broker's samples
-- (`n`) are counted only in buckets where it parked one of them.
-- $1 from, $2 to, $3 bucket minutes, $4 tenant, $5 queue (NULL: every queue)
WITH p AS (
       SELECT broker_id,
              date_bin(make_interval(mins => $3), sampled_at,
                       TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
              queue, sum(parked)::bigint AS total, max(parked)::bigint AS most
         FROM broker_parked
        WHERE tenant = $4 AND sampled_at >= $1 AND sampled_at <= $2
          AND ($5::text IS NULL OR queue = $5)
        GROUP BY broker_id, bucket, queue),
     n AS (
       SELECT broker_id,
              date_bin(make_interval(mins => $3), sampled_at,
                       TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
              count(*) AS samples, max(hostname) AS hostname, max(port) AS port
         FROM broker_samples
        WHERE sampled_at >= $1 AND sampled_at <= $2
          AND broker_id IN (SELECT broker_id FROM p)
        GROUP BY broker_id, bucket)
SELECT p.bucket, p.queue, p.broker_id, n.hostname, n.port,
       p.total::float8 / greatest(n.samples, 1) AS avg, p.most
  FROM p JOIN n ON n.broker_id = p.broker_id AND n.bucket = p.bucket
 ORDER BY p.bucket, p.queue, n.hostname, n.port, p.broker_id
