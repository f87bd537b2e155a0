-- Ephemeral queues (crate::ephemeral): the declared options (`ephemeral_queues`, logged) and
-- the contents (UNLOGGED: `ephemeral_live`, `_rings`, `_messages`, `_groups`, `_cursors`,
-- `_deliveries`). Each `-- name:` section is one statement, exactly as sent
-- (crates/store/build.rs). Every statement names the tenant and the queue, so on Citus it runs
-- on the one worker holding the tenant's shard. The three removals (expire, drop_oldest, trim)
-- delete some of one queue's messages and return what each freed (crate::ephemeral::remove
-- counts them); each takes four parameters so one caller runs them all.

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

-- name: declared
-- The queue's declared options (no row: not declared).
-- $1 tenant, $2 queue
SELECT max_bytes, max_length, policy, ttl_seconds, lease_seconds,
       retry_limit, window_ms, window_count
  FROM ephemeral_queues WHERE tenant = $1 AND name = $2

-- name: declare
-- Declares the queue, replacing what it was declared with; `created` says it was not declared
-- before.
-- $1 tenant, $2 queue, $3 max bytes, $4 max length, $5 policy, $6 ttl seconds, $7 lease seconds,
-- $8 retry limit, $9 window ms, $10 window count
INSERT INTO ephemeral_queues (tenant, name, max_bytes, max_length, policy, ttl_seconds, lease_seconds,
                              retry_limit, window_ms, window_count)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (tenant, name) DO UPDATE
   SET max_bytes = excluded.max_bytes, max_length = excluded.max_length,
       policy = excluded.policy, ttl_seconds = excluded.ttl_seconds,
       lease_seconds = excluded.lease_seconds, retry_limit = excluded.retry_limit,
       window_ms = excluded.window_ms, window_count = excluded.window_count,
       updated_at = excluded.updated_at
RETURNING (xmax = 0) AS created

-- name: take_queue_turn
-- Takes the tenant's turn at making queues (an advisory lock held until the transaction
-- ends), so queue_count, a statement begun after the turn came, sees every queue an earlier
-- turn made: without it, new queues made together each counted the others as absent and the
-- tenant passed its limit.
-- $1 tenant
SELECT pg_advisory_xact_lock(hashtextextended('regent-ephemeral-queues/' || $1, 0))

-- name: queue_count
-- How many queues the tenant has, declared or live.
-- $1 tenant
SELECT count(*) AS n FROM (SELECT name FROM ephemeral_queues WHERE tenant = $1
                           UNION SELECT queue FROM ephemeral_live WHERE tenant = $1) q

-- name: lock
-- Locks the queue's live row for the transaction (no row: the queue has none). Every write of
-- a queue's contents takes this lock first: the queue's writes take turns, and no other lock
-- order exists.
-- $1 tenant, $2 queue
SELECT epoch, next_seq, length, bytes FROM ephemeral_live
 WHERE tenant = $1 AND queue = $2 FOR UPDATE

-- name: create
-- Gives the queue a live row (a new incarnation) unless it has one; the caller then locks it.
-- $1 tenant, $2 queue
INSERT INTO ephemeral_live (tenant, queue) VALUES ($1, $2)
ON CONFLICT (tenant, queue) DO NOTHING

-- name: remove_deliveries
-- The deliveries of messages a removal deleted.
-- $1 tenant, $2 queue, $3 the removed messages' sequence numbers
DELETE FROM ephemeral_deliveries WHERE tenant = $1 AND queue = $2 AND seq = ANY($3)

-- name: uncount
-- Takes a removal off the live row's counts, and adds it to a drop counter.
-- $1 tenant, $2 queue, $3 messages removed, $4 bytes removed, $5 dropped by ttl,
-- $6 dropped by the queue's bounds
UPDATE ephemeral_live
   SET length = length - $3, bytes = bytes - $4,
       dropped_ttl = dropped_ttl + $5, dropped_bounds = dropped_bounds + $6
 WHERE tenant = $1 AND queue = $2

-- name: add_ring
-- Gives the queue the partition, unless it has it.
-- $1 tenant, $2 queue, $3 partition
INSERT INTO ephemeral_rings (tenant, queue, partition) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING

-- name: append
-- Appends the payloads to the partition as sequence numbers $4.., and counts them on the live
-- row (locked by the caller).
-- $1 tenant, $2 queue, $3 partition, $4 the first sequence number, $5 the payloads (JSON text)
WITH added AS (
  INSERT INTO ephemeral_messages (tenant, queue, seq, partition, payload, bytes)
  SELECT $1, $2, $4 + p.i - 1, $3, p.payload, octet_length(p.payload)
    FROM unnest($5::text[]) WITH ORDINALITY AS p(payload, i)
  RETURNING bytes)
UPDATE ephemeral_live
   SET next_seq = $4 + cardinality($5::text[]),
       length = length + cardinality($5::text[]),
       bytes = ephemeral_live.bytes + (SELECT coalesce(sum(bytes), 0) FROM added)
 WHERE tenant = $1 AND queue = $2

-- name: remember_group
-- Remembers the group among the queue's consumer groups, unless it already holds $4.
-- $1 tenant, $2 queue, $3 consumer group, $4 groups at most
INSERT INTO ephemeral_groups (tenant, queue, grp)
SELECT $1, $2, $3
 WHERE (SELECT count(*) FROM ephemeral_groups WHERE tenant = $1 AND queue = $2) < $4
ON CONFLICT DO NOTHING

-- name: due
-- Up to $5 of the group's deliveries due again (lease expired, or nacked), oldest first.
-- $1 tenant, $2 queue, $3 consumer group, $4 partition (NULL: any), $5 limit
SELECT d.seq, d.partition, d.attempts, m.payload
  FROM ephemeral_deliveries d
  JOIN ephemeral_messages m ON m.tenant = d.tenant AND m.queue = d.queue AND m.seq = d.seq
 WHERE d.tenant = $1 AND d.queue = $2 AND d.grp = $3 AND m.tenant = $1 AND m.queue = $2
   AND ($4::text IS NULL OR d.partition = $4) AND d.lease_until <= now()
 ORDER BY d.seq
 LIMIT $5

-- name: add_cursors
-- The group's cursors on the partition named, or on every partition the queue has, starting at
-- the head; a statement of its own: a statement does not see the rows it inserts, and take's
-- move must.
-- $1 tenant, $2 queue, $3 consumer group, $4 partition (NULL: every partition)
INSERT INTO ephemeral_cursors (tenant, queue, grp, partition, next_seq)
SELECT $1, $2, $3, p, 0
  FROM (SELECT $4::text AS p WHERE $4::text IS NOT NULL
        UNION SELECT partition FROM ephemeral_rings
               WHERE tenant = $1 AND queue = $2 AND $4::text IS NULL) s
ON CONFLICT DO NOTHING

-- name: take
-- Up to $5 messages the group has not been handed, oldest first, in the partition named (else
-- in any partition holding messages); the group's cursors move past them.
-- $1 tenant, $2 queue, $3 consumer group, $4 partition (NULL: any), $5 limit
WITH picked AS (
  SELECT m.seq, m.partition, m.payload
    FROM ephemeral_messages m
    JOIN ephemeral_cursors c ON c.tenant = m.tenant AND c.queue = m.queue
                            AND c.partition = m.partition
   WHERE m.tenant = $1 AND m.queue = $2 AND c.tenant = $1 AND c.queue = $2
     AND c.grp = $3 AND ($4::text IS NULL OR c.partition = $4)
     AND m.seq >= c.next_seq
   ORDER BY m.seq
   LIMIT $5),
moved AS (
  UPDATE ephemeral_cursors c SET next_seq = t.top + 1
    FROM (SELECT partition, max(seq) AS top FROM picked GROUP BY partition) t
   WHERE c.tenant = $1 AND c.queue = $2 AND c.grp = $3 AND c.partition = t.partition)
SELECT seq, partition, 0::int AS attempts, payload FROM picked ORDER BY seq

-- name: lease
-- Leases the group's deliveries until $7 seconds from now.
-- $1 tenant, $2 queue, $3 consumer group, $4 sequence numbers, $5 their partitions,
-- $6 deliveries so far (this one included), $7 lease seconds
INSERT INTO ephemeral_deliveries (tenant, queue, grp, seq, partition, attempts, lease_until)
SELECT $1, $2, $3, h.seq, h.partition, h.attempts,
       now() + make_interval(secs => $7::bigint)
  FROM unnest($4::bigint[], $5::text[], $6::int[]) AS h(seq, partition, attempts)
ON CONFLICT (tenant, queue, grp, seq) DO UPDATE
   SET attempts = excluded.attempts, lease_until = excluded.lease_until

-- name: held
-- The group's deliveries among $4.
-- $1 tenant, $2 queue, $3 consumer group, $4 sequence numbers
SELECT seq, partition, attempts FROM ephemeral_deliveries
 WHERE tenant = $1 AND queue = $2 AND grp = $3 AND seq = ANY($4)

-- name: settle_done
-- Ends the group's deliveries $4.
-- $1 tenant, $2 queue, $3 consumer group, $4 sequence numbers
DELETE FROM ephemeral_deliveries
 WHERE tenant = $1 AND queue = $2 AND grp = $3 AND seq = ANY($4)

-- name: settle_again
-- Makes the group's deliveries $4 due now.
-- $1 tenant, $2 queue, $3 consumer group, $4 sequence numbers
UPDATE ephemeral_deliveries SET lease_until = now()
 WHERE tenant = $1 AND queue = $2 AND grp = $3 AND seq = ANY($4)

-- name: count_retry_drops
-- Counts messages dropped past the queue's retry limit.
-- $1 tenant, $2 queue, $3 messages dropped
UPDATE ephemeral_live SET dropped_retry = dropped_retry + $3
 WHERE tenant = $1 AND queue = $2

-- name: forget_empty
-- Forgets the partitions a trim left empty, and their cursors (a cursor of an empty partition
-- is the head again: sequence numbers only grow).
-- $1 tenant, $2 queue
WITH empty AS (
  DELETE FROM ephemeral_rings r WHERE r.tenant = $1 AND r.queue = $2
     AND NOT EXISTS (SELECT 1 FROM ephemeral_messages m
                      WHERE m.tenant = $1 AND m.queue = $2 AND m.partition = r.partition)
  RETURNING partition)
DELETE FROM ephemeral_cursors c USING empty e
 WHERE c.tenant = $1 AND c.queue = $2 AND c.partition = e.partition

-- name: delete_deliveries
-- Every delivery of the queue (a reset, a delete).
-- $1 tenant, $2 queue
DELETE FROM ephemeral_deliveries WHERE tenant = $1 AND queue = $2

-- name: delete_cursors
-- Every cursor of the queue.
-- $1 tenant, $2 queue
DELETE FROM ephemeral_cursors WHERE tenant = $1 AND queue = $2

-- name: delete_rings
-- Every partition of the queue.
-- $1 tenant, $2 queue
DELETE FROM ephemeral_rings WHERE tenant = $1 AND queue = $2

-- name: delete_messages
-- Every message of the queue (a reset counts them as dropped).
-- $1 tenant, $2 queue
DELETE FROM ephemeral_messages WHERE tenant = $1 AND queue = $2

-- name: reset_live
-- An emptied queue holds nothing; its drop counters and incarnation stay.
-- $1 tenant, $2 queue
UPDATE ephemeral_live SET length = 0, bytes = 0 WHERE tenant = $1 AND queue = $2

-- name: delete_groups
-- The queue's remembered groups.
-- $1 tenant, $2 queue
DELETE FROM ephemeral_groups WHERE tenant = $1 AND queue = $2

-- name: delete_live
-- The queue's live row.
-- $1 tenant, $2 queue
DELETE FROM ephemeral_live WHERE tenant = $1 AND queue = $2

-- name: delete_declaration
-- The queue's declaration.
-- $1 tenant, $2 queue
DELETE FROM ephemeral_queues WHERE tenant = $1 AND name = $2

-- name: list
-- The tenant's queues, declared or live, by name (with $2, only that one): each with its
-- declared options (NULL where not declared), its counts and drop counters, and its partitions
-- and groups.
-- $1 tenant, $2 queue (NULL: every one)
SELECT * FROM (
  SELECT coalesce(q.name, l.queue) AS name, q.name IS NOT NULL AS is_declared,
         q.max_bytes, q.max_length, q.policy, q.ttl_seconds, q.lease_seconds, q.retry_limit,
         q.window_ms, q.window_count,
         coalesce(l.length, 0) AS length, coalesce(l.bytes, 0) AS bytes,
         coalesce(l.dropped_bounds, 0) AS dropped_bounds, coalesce(l.dropped_ttl, 0) AS dropped_ttl,
         coalesce(l.dropped_retry, 0) AS dropped_retry,
         least(q.created_at, l.created_at) AS created_at,
         (SELECT count(*) FROM ephemeral_rings r
           WHERE r.tenant = $1 AND r.queue = coalesce(q.name, l.queue)) AS partitions,
         (SELECT count(*) FROM ephemeral_groups g
           WHERE g.tenant = $1 AND g.queue = coalesce(q.name, l.queue)) AS groups
    FROM (SELECT * FROM ephemeral_queues WHERE tenant = $1) q
    FULL JOIN (SELECT * FROM ephemeral_live WHERE tenant = $1) l ON l.queue = q.name
) s WHERE $2::text IS NULL OR s.name = $2
 ORDER BY 1

-- name: partition_depth
-- The queue's partitions, by name, with their messages and bytes.
-- $1 tenant, $2 queue
SELECT partition, count(*) AS messages, sum(bytes)::bigint AS bytes
  FROM ephemeral_messages WHERE tenant = $1 AND queue = $2
 GROUP BY partition ORDER BY partition

-- name: group_depth
-- The queue's groups, by name, each with its backlog: messages it has not been handed,
-- deliveries due again, and deliveries under a live lease.
-- $1 tenant, $2 queue
SELECT g.grp,
       (SELECT count(*) FROM ephemeral_messages m
          LEFT JOIN ephemeral_cursors c
                 ON c.tenant = $1 AND c.queue = $2 AND c.grp = g.grp
                AND c.partition = m.partition
         WHERE m.tenant = $1 AND m.queue = $2
           AND m.seq >= coalesce(c.next_seq, 0)) AS fresh,
       (SELECT count(*) FROM ephemeral_deliveries d
         WHERE d.tenant = $1 AND d.queue = $2 AND d.grp = g.grp
           AND d.lease_until <= now()) AS due,
       (SELECT count(*) FROM ephemeral_deliveries d
         WHERE d.tenant = $1 AND d.queue = $2 AND d.grp = g.grp
           AND d.lease_until > now()) AS leased
  FROM ephemeral_groups g WHERE g.tenant = $1 AND g.queue = $2
 ORDER BY g.grp

-- name: totals
-- Per tenant: its queues with contents, and the messages and bytes they hold (the Prometheus
-- gauges).
-- (no parameters)
SELECT tenant, count(*) AS queues, sum(length)::bigint AS messages,
       sum(bytes)::bigint AS bytes
  FROM ephemeral_live GROUP BY tenant ORDER BY tenant
