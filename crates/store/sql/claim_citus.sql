-- The claim on Citus (crate::claim::citus), beside claim.sql's on one PostgreSQL. A queue's
-- cursors are spread over the workers with their partitions, and Citus locks rows (FOR UPDATE)
-- only in a statement routed to one shard: so a claim reads its candidates first, without
-- locks, then claims them one partition at a time, each statement routed to the partition's
-- worker. Whether a cursor has something to claim is the same condition as on one PostgreSQL.

-- name: candidates
-- The group's cursors that look claimable, least recently claimed first ($4 of them),
-- partitions never claimed in the order they were created, as on one PostgreSQL, whose
-- partition ids are time-ordered where these are derived from names. A look, not a lock:
-- another pop may take one before this one claims it.
-- $1 queue id, $2 consumer group, $3 window buffer seconds, $4 how many at most
SELECT c.partition_id FROM cursor_state c JOIN partition_heads p ON p.id = c.partition_id
 WHERE c.queue_id = $1 AND c.consumer_group = $2
   AND c.committed < p.next_offset - 1
   AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
   AND ($3::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $3::float8))
 ORDER BY c.lease_expires_at NULLS FIRST, p.created_at, c.partition_id LIMIT $4

-- name: candidates_hinted
-- variant of: candidates
-- candidates among the hinted partitions ($5) only.
-- $1-$4 as candidates, $5 the hinted partition ids
SELECT c.partition_id FROM cursor_state c JOIN partition_heads p ON p.id = c.partition_id
 WHERE c.queue_id = $1 AND c.consumer_group = $2
   AND c.partition_id = ANY ($5::uuid[]) -- (variant)
   AND c.committed < p.next_offset - 1
   AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
   AND ($3::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $3::float8))
 ORDER BY c.lease_expires_at NULLS FIRST, p.created_at, c.partition_id LIMIT $4

-- name: claim_one
-- Claims partition $1 for the group under lease $4 and reads it, as the claim on one
-- PostgreSQL does for each partition it takes (regent_claim_one, which Citus runs on the
-- partition's worker). Nothing comes back when the cursor has nothing to claim or another
-- pop holds it.
-- $1 partition id, $2 consumer group, $3 window buffer seconds, $4 lease id, $5 lease seconds,
-- $6 messages at most
SELECT * FROM regent_claim_one($1, $2, $3, $4, $5, $6)
