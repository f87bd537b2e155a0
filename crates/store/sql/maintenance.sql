-- Maintenance switches and the push buffer (crate::maintenance, spec §15): the switches per
-- tenant, the buffered pushes, and the drain that appends them when push maintenance ends.
-- Each `-- name:` section is one statement, exactly as sent (crates/store/build.rs).

-- name: set
-- Sets the tenant's push switch, its pop switch, or both (NULL: unchanged); returns them as
-- stored. The time comes in through EXCLUDED: Citus evaluates `now()` in VALUES on the
-- coordinator, but takes no volatile call in a reference table's DO UPDATE.
-- $1 tenant, $2 push (NULL: unchanged), $3 pop (NULL: unchanged)
INSERT INTO maintenance AS m (tenant, push, pop, changed_at)
VALUES ($1, coalesce($2, false), coalesce($3, false), now())
ON CONFLICT (tenant) DO UPDATE
   SET push = coalesce($2, m.push), pop = coalesce($3, m.pop),
       changed_at = EXCLUDED.changed_at
RETURNING push, pop

-- name: get
-- The tenant's switches (off when it has none) and how many of its pushes wait in the buffer.
-- $1 tenant
SELECT coalesce(m.push, false) AS push, coalesce(m.pop, false) AS pop,
       (SELECT count(*) FROM push_buffer WHERE tenant = $1) AS buffered
  FROM (SELECT 1) one LEFT JOIN maintenance m ON m.tenant = $1

-- name: poll
-- Every tenant with a switch on or pushes buffered, and which.
-- (no parameters)
SELECT tenant, bool_or(push) AS push, bool_or(pop) AS pop,
       bool_or(buffered) AS buffered
  FROM (SELECT tenant, push, pop, false AS buffered FROM maintenance
         WHERE push OR pop
        UNION ALL
        SELECT DISTINCT tenant, false, false, true FROM push_buffer) s
 GROUP BY tenant

-- name: buffer
-- Buffers the messages in the order given; returns the hashes taken (a hash already buffered
-- is not).
-- $1 tenant, $2 partition id, $3 index hashes, $4 frames (pairwise)
INSERT INTO push_buffer (tenant, partition_id, hash, frame)
SELECT $1, $2, m.hash, m.frame
  FROM unnest($3::uuid[], $4::bytea[]) WITH ORDINALITY AS m(hash, frame, ord)
 ORDER BY m.ord
ON CONFLICT (hash) DO NOTHING
RETURNING hash

-- name: buffered_frame
-- The buffered message holding this transaction id's hash, if any.
-- $1 index hash
SELECT frame FROM push_buffer WHERE hash = $1

-- name: share_drain_lock
-- The tenant's drain lock, shared, taken by a push that may add to the buffer: no drain can
-- find the buffer empty while that transaction may still add to it.
-- $1 tenant
SELECT pg_advisory_xact_lock_shared(hashtext('regent-drain:' || $1))

-- name: still_buffering
-- Whether the tenant's pushes still go to the buffer: push maintenance is on, or pushes wait
-- to be drained.
-- $1 tenant
SELECT coalesce((SELECT push FROM maintenance WHERE tenant = $1), false)
       OR EXISTS (SELECT 1 FROM push_buffer WHERE tenant = $1) AS buffering

-- name: take_drain_lock
-- The tenant's drain lock, exclusive, waited for: pushes into the buffer hold it shared, and
-- PostgreSQL queues new shared requests behind a waiting exclusive one, so a steady stream of
-- them cannot starve the drain. Brokers draining at once take turns.
-- $1 tenant
SELECT pg_advisory_xact_lock(hashtext('regent-drain:' || $1))

-- name: drain
-- Removes up to $2 of the tenant's oldest buffered messages from the buffer and returns them
-- (the caller appends them, in arrival order, in the same transaction).
-- $1 tenant, $2 limit
DELETE FROM push_buffer WHERE seq IN (
   SELECT seq FROM push_buffer WHERE tenant = $1 ORDER BY seq LIMIT $2)
RETURNING seq, partition_id, hash, frame

-- name: drained_places
-- The queue of each partition a drain appended to.
-- $1 partition ids
SELECT p.queue_id, q.name AS queue, p.id
  FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = ANY($1)
