-- Leases (crate::lease): extended, checked, released. Each `-- name:` section is one
-- statement, exactly as sent (crates/store/build.rs). A lease is on the newest `cursor_log`
-- row of each cursor it holds (V21); its rows are found through the log's lease index.

-- name: extend
-- Every (partition, group) whose live lease is $1 gets expiry = max(current, now + $2
-- seconds); returns the new expiries (regent_extend). Expired, released or unknown leases are
-- not revived.
-- $1 lease id, $2 seconds, $3 tenant
SELECT * FROM regent_extend($1, $2, $3)

-- name: held
-- Whether the lease is held anywhere in the tenant, live or not (after extend renewed
-- nothing: expired, or not found).
-- $1 lease id, $2 tenant
SELECT 1 FROM regent_lease_holders($1, $2) LIMIT 1

-- name: all_live
-- How many of the lease ids are live for the tenant.
-- $1 lease ids, $2 tenant
SELECT count(DISTINCT s.lease_id) AS live
  FROM (SELECT DISTINCT l.partition_id, l.consumer_group FROM cursor_log l
         WHERE l.lease_id = ANY ($1)) h
  JOIN cursor_state s
    ON s.partition_id = h.partition_id AND s.consumer_group = h.consumer_group
  JOIN partitions p ON p.id = s.partition_id
 WHERE s.lease_id = ANY ($1) AND s.lease_expires_at > now() AND p.tenant = $2

-- name: release
-- Ends a live lease that no client received (regent_release): its partitions are claimable
-- again at once. Like an expiry it charges no retry, and the lease id stops being valid for
-- acks; the expiry is pulled back to now (never pushed forward) so claim order stays least
-- recently claimed first. A lease that already ended, or never committed, releases nothing.
-- Returns each partition's queue and group.
-- $1 lease id, $2 tenant
SELECT * FROM regent_release($1, $2)
