-- Retention (crate::retention): whole segments deleted from the front of a partition's log
-- once due, by age alone (`retentionSeconds`) or by age once every consumer group of the queue
-- has passed them (`completedRetentionSeconds`). Each `-- name:` section is one statement,
-- exactly as sent (crates/store/build.rs); a `_citus` statement is the Citus layout's in place
-- of the one without the suffix.

-- name: queues
-- The queues whose options mention retention.
-- (no parameters)
SELECT id, options FROM queues
 WHERE options ?| array['retentionSeconds', 'completedRetentionSeconds',
                        'maxWaitTimeSeconds']

-- name: expire
-- Deletes up to $4 due segments of the queue, a prefix of each partition's log: appended
-- before $2, or appended before $3 and passed by every group. Each partition's log is read in
-- offset order up to its first segment not due, through the primary key: a partition with
-- nothing due costs one index probe. Returns, per partition, the first offset kept, when the
-- newest segment that went was appended, and what went.
-- `passed` is how far every group has passed on the partition: the lowest cursor, or -1 while
-- a group of the queue has no cursor there yet (it may start from the beginning) or no group
-- has one at all (nothing has been consumed). $5 holds the queue's groups, read first
-- (groups, has_cursor): Citus plans no correlated subquery over a reference table such as
-- `subscriptions`.
-- $1 queue id, $2 every segment appended before this is due (NULL: none), $3 a passed segment
-- appended before this is due (NULL: none), $4 segments at most, $5 the queue's groups
WITH parts AS (
  SELECT p.id, p.next_offset,
         CASE WHEN (SELECT count(*) FROM cursors c
                     WHERE c.partition_id = p.id AND c.consumer_group = ANY ($5::text[]))
                  < cardinality($5::text[])
              THEN -1
              ELSE coalesce((SELECT min(c.committed) FROM cursor_state c WHERE c.partition_id = p.id), -1)
         END AS passed FROM partition_heads p WHERE p.queue_id = $1),
keep AS (
  SELECT parts.id, coalesce((
      SELECT s.base_offset FROM segments s
       WHERE s.partition_id = parts.id
         AND NOT (($2::timestamptz IS NOT NULL AND s.created_at < $2)
                  OR ($3::timestamptz IS NOT NULL AND s.created_at < $3
                      AND s.end_offset <= parts.passed))
       ORDER BY s.end_offset LIMIT 1),
      parts.next_offset) AS keep_from
    FROM parts),
doomed AS (
  SELECT s.partition_id, s.end_offset FROM keep
    JOIN segments s ON s.partition_id = keep.id AND s.end_offset < keep.keep_from
   ORDER BY s.partition_id, s.end_offset LIMIT $4),
gone AS (
  DELETE FROM segments s USING doomed d
   WHERE s.partition_id = d.partition_id AND s.end_offset = d.end_offset
  RETURNING s.partition_id, s.base_offset, s.end_offset, s.created_at)
SELECT partition_id, max(end_offset) + 1 AS first_kept, max(created_at) AS last_gone_at,
       count(*) AS segments, sum(end_offset - base_offset + 1)::bigint AS messages
  FROM gone GROUP BY partition_id ORDER BY partition_id

-- name: groups
-- The queue's named groups (each has a subscription).
-- $1 queue id
SELECT consumer_group FROM subscriptions WHERE queue_id = $1

-- name: has_cursor
-- Whether the group (queue mode, which has no subscription) has a cursor on any of the
-- queue's partitions. A statement of its own: Citus plans no query over both a reference
-- table (`subscriptions`) and a distributed one.
-- $1 queue id, $2 consumer group
SELECT EXISTS (SELECT 1 FROM cursors WHERE queue_id = $1 AND consumer_group = $2)

-- name: move_cursors
-- Moves the cursors below the partitions' new first offsets up to them, a lease entirely over
-- deleted messages released (regent_retain_cursors), before move_past moves the partitions.
-- $1 partition ids, $2 their first offsets kept (pairwise)
SELECT regent_retain_cursors($1, $2)

-- name: move_past
-- Moves the partitions' first offsets past the deleted segments (their cursors moved first,
-- by move_cursors), and drops the traces and tombstones of the deleted messages. The last push
-- time is kept too: a log emptied has no segment left to tell it (partition_heads).
-- $1 partition ids, $2 their first offsets kept, $3 when the newest segment deleted of each
-- was appended (pairwise)
WITH u AS (SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[])
                      AS u(pid, first_kept, last_gone_at)),
     t AS (DELETE FROM traces t USING u
            WHERE t.partition_id = u.pid AND t."offset" < u.first_kept),
     k AS (DELETE FROM tombstones k USING u
            WHERE k.partition_id = u.pid AND k."offset" < u.first_kept)
UPDATE partitions p SET first_offset = greatest(p.first_offset, u.first_kept),
                        last_push_at = greatest(p.last_push_at, u.last_gone_at)
  FROM u WHERE p.id = u.pid
