-- Leases (crate::lease): extended, checked, released. Each `-- name:` section is one
-- statement, exactly as sent (crates/store/build.rs).

-- name: extend
-- Every (partition, group) whose live lease is $1 gets expiry = max(current, now + $2
-- seconds); returns the new expiries. Expired, released or unknown leases are not revived.
-- $1 lease id, $2 seconds, $3 tenant
UPDATE cursors c
   SET lease_expires_at = greatest(c.lease_expires_at, now() + make_interval(secs => $2::float8))
  FROM partitions p
 WHERE c.lease_id = $1 AND c.lease_expires_at > now()
   AND p.id = c.partition_id AND p.tenant = $3
RETURNING c.lease_expires_at AS expires_at

-- name: held
-- Whether the lease is held anywhere in the tenant, live or not (after extend renewed
-- nothing: expired, or not found).
-- $1 lease id, $2 tenant
SELECT 1 FROM cursors c JOIN partitions p ON p.id = c.partition_id
 WHERE c.lease_id = $1 AND p.tenant = $2 LIMIT 1

-- name: all_live
-- How many of the lease ids are live for the tenant.
-- $1 lease ids, $2 tenant
SELECT count(DISTINCT c.lease_id) AS live FROM cursors c JOIN partitions p ON p.id = c.partition_id
 WHERE c.lease_id = ANY($1) AND c.lease_expires_at > now() AND p.tenant = $2

-- name: release
-- Ends a live lease that no client received: its partitions are claimable again at once. Like
-- an expiry it charges no retry, and the lease id stops being valid for acks; the expiry is
-- pulled back to now (never pushed forward) so claim order stays least recently claimed
-- first. A lease that already ended, or never committed, releases nothing. Returns each
-- partition's queue and group.
-- $1 lease id, $2 tenant
UPDATE cursors c
   SET lease_id = NULL, lease_expires_at = least(c.lease_expires_at, now())
  FROM partitions p JOIN queues q ON q.id = p.queue_id
 WHERE c.lease_id = $1 AND c.lease_expires_at > now()
   AND p.id = c.partition_id AND p.tenant = $2
RETURNING q.name AS queue, c.consumer_group
