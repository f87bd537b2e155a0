-- Dead letters (crate::dead_letters). Statements still inline in dead_letters.rs move here as
-- they change.

-- name: take
-- Deletes the tenant's dead letters $2 and returns them with their queue's name, where their
-- partition still exists, locked in id order first (two bulk calls over the same rows then
-- wait for each other instead of deadlocking).
-- $1 tenant, $2 dead-letter ids
DELETE FROM dead_letters d
 USING queues q, partitions p
 WHERE d.id IN (SELECT id FROM dead_letters WHERE tenant = $1 AND id = ANY ($2) -- (variant)
                 ORDER BY id FOR UPDATE) -- (variant)
   AND q.id = d.queue_id AND p.id = d.partition_id
RETURNING d.id, d.queue_id, q.name AS queue, d.partition_id, d.consumer_group,
          d.error, d."offset", d.frame

-- name: take_citus
-- variant of: take
-- take on Citus: the rows are deleted on every shard at once, in no global order, so two
-- bulk calls over the same rows may deadlock there, which Citus breaks and the caller's retry
-- repeats.
-- $1 tenant, $2 dead-letter ids
DELETE FROM dead_letters d
 USING queues q, partitions p
 WHERE d.tenant = $1 AND d.id = ANY ($2) -- (variant)
   AND q.id = d.queue_id AND p.id = d.partition_id
RETURNING d.id, d.queue_id, q.name AS queue, d.partition_id, d.consumer_group,
          d.error, d."offset", d.frame
