-- Queen's timers (crate::timers, table `timers`, V17): pending timers by (tenant, queue, key),
-- and what the firing loop reads and takes. Each `-- name:` section is one statement, exactly
-- as sent (crates/store/build.rs). A statement about one timer or one queue's timers names the
-- queue, so on Citus (the table distributed by `queue`) it runs on one worker; the firing
-- loop's two scans over every queue (nearest, due) are the only statements over every shard.

-- name: take_turns
-- Makes the transaction take its turn at each (queue, key): it waits for every other schedule
-- or cancel of those keys to end, and holds them until it ends. The keys are locked in one
-- order (`OFFSET 0` keeps the sorted subquery whole, so the locks are taken in its order), so
-- two batches of the same keys cannot deadlock on them.
-- $1 tenant, $2 queues, $3 keys (pairwise)
SELECT count(pg_advisory_xact_lock(h)) FROM (
    SELECT DISTINCT hashtextextended('regent-timer/' || $1 || '/' || q || '/' || k, 0) AS h
      FROM unnest($2::text[], $3::text[]) AS u(q, k)
     ORDER BY h OFFSET 0) sorted

-- name: claim
-- Locks the pending timer of (queue, key) without waiting for it (with $4, only the timer
-- scheduled under that txn): `mine` is false when another transaction holds it. The plain
-- read sees a row another transaction holds (its snapshot predates that transaction's
-- delete); the locking read skips it. No row: no such timer.
-- $1 tenant, $2 queue, $3 key, $4 txn (NULL: any)
WITH locked AS (
    SELECT 1 FROM timers
     WHERE tenant = $1 AND queue = $2 AND timer_key = $3
       AND ($4::text IS NULL OR txn = $4)
       FOR UPDATE SKIP LOCKED)
SELECT EXISTS (SELECT 1 FROM locked) AS mine, txn, message_id, deliver_at
  FROM timers
 WHERE tenant = $1 AND queue = $2 AND timer_key = $3
   AND ($4::text IS NULL OR txn = $4)

-- name: upsert
-- Stores a timer, replacing the pending timer of its key; returns its `deliver_at`. `now()`
-- only in the values: Citus refuses a function in `DO UPDATE SET` unless it is immutable, and
-- evaluates the values on the coordinator.
-- $1 tenant, $2 queue, $3 key, $4 txn, $5 message id, $6 partition, $7 payload (JSON text),
-- $8 producer's subject (NULL: none), $9 delay in ms from now, by the database's clock
INSERT INTO timers (tenant, queue, timer_key, txn, message_id, partition, payload,
                    producer_sub, deliver_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
        now() + $9::float8 * interval '1 millisecond', now())
ON CONFLICT (tenant, queue, timer_key) DO UPDATE
   SET txn = excluded.txn, message_id = excluded.message_id,
       partition = excluded.partition, payload = excluded.payload,
       producer_sub = excluded.producer_sub, deliver_at = excluded.deliver_at,
       attempts = 0, updated_at = excluded.updated_at
RETURNING deliver_at

-- name: delete
-- Deletes the timer of (queue, key), which the caller has claimed.
-- $1 tenant, $2 queue, $3 key
DELETE FROM timers WHERE tenant = $1 AND queue = $2 AND timer_key = $3

-- name: peek
-- The pending timer of (queue, key).
-- $1 tenant, $2 queue, $3 key
SELECT queue, timer_key, txn, message_id, partition, payload, producer_sub,
       deliver_at, attempts, created_at, updated_at
  FROM timers WHERE tenant = $1 AND queue = $2 AND timer_key = $3

-- name: list
-- Up to $4 pending timers of the queue by key, after $3 (exclusive).
-- $1 tenant, $2 queue, $3 key (NULL: from the first), $4 limit
SELECT queue, timer_key, txn, message_id, partition, payload, producer_sub,
       deliver_at, attempts, created_at, updated_at
  FROM timers
 WHERE tenant = $1 AND queue = $2 AND ($3::text IS NULL OR timer_key > $3)
 ORDER BY timer_key LIMIT $4

-- name: by_queue
-- The tenant's queues with pending timers, by name: how many, and the nearest deadline.
-- $1 tenant
SELECT queue, count(*) AS pending, min(deliver_at) AS next
  FROM timers WHERE tenant = $1 GROUP BY queue ORDER BY queue

-- name: nearest
-- Milliseconds from now to the nearest deadline of all (negative when one is due), by the
-- database's clock; NULL with no timer pending.
-- (no parameters)
SELECT (extract(epoch FROM min(deliver_at) - clock_timestamp()) * 1000)::float8
       AS ms
  FROM timers

-- name: due
-- The queues of the (at most $1) most overdue timers, most overdue first, and the database's
-- `now()` they were due by.
-- $1 limit
SELECT tenant, queue, now() AS at FROM timers
 WHERE deliver_at <= now() ORDER BY deliver_at LIMIT $1

-- name: take
-- Takes (deletes, with the transaction) up to $4 timers of the queue due by $3 that no other
-- transaction holds, by deadline.
-- $1 tenant, $2 queue, $3 due by, $4 limit
DELETE FROM timers
 WHERE tenant = $1 AND queue = $2 AND timer_key IN (
       SELECT timer_key FROM timers
        WHERE tenant = $1 AND queue = $2 AND deliver_at <= $3
        ORDER BY deliver_at LIMIT $4
          FOR UPDATE SKIP LOCKED)
RETURNING queue, timer_key, txn, message_id, partition, payload, producer_sub,
          deliver_at, attempts, created_at, updated_at

-- name: postpone
-- Puts off the fire of the queue's timers, each to its instant, counting a failed attempt.
-- Instants as parameters: Citus refuses `now()` beside a column in an update's SET.
-- $1 tenant, $2 queue, $3 keys, $4 their instants (pairwise), $5 now, as the caller read it
UPDATE timers t
   SET deliver_at = p.until, attempts = t.attempts + 1, updated_at = $5
  FROM unnest($3::text[], $4::timestamptz[]) AS p(k, until)
 WHERE t.tenant = $1 AND t.queue = $2 AND t.timer_key = p.k
