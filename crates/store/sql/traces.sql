-- Traces of messages (crate::traces): recorded with the events they describe, read per
-- message, per name, and as the list of names. Each `-- name:` section is one statement,
-- exactly as sent (crates/store/build.rs).

-- name: record
-- Records trace $1 of the message with index hash $4 in the tenant's partition $2, while the
-- log holds it (a message deleted by retention, whose index entry lives on, is not traced).
-- $1 trace id, $2 partition id, $3 tenant, $4 index hash, $5 transaction id, $6 event type,
-- $7 data, $8 consumer group, $9 worker id, $10 trace names
INSERT INTO traces (id, tenant, queue_id, partition_id, transaction_id, "offset",
                    event_type, data, consumer_group, worker_id, trace_names)
SELECT $1, p.tenant, p.queue_id, p.id, $5, x."offset", $6, $7, $8, $9, $10
  FROM partitions p JOIN tx_index x ON x.hash = $4
 WHERE p.id = $2 AND p.tenant = $3
   AND (SELECT s.base_offset <= x."offset" FROM segments s
         WHERE s.partition_id = p.id AND s.end_offset >= x."offset"
         ORDER BY s.end_offset LIMIT 1)

-- name: record_citus
-- variant of: record
-- record on Citus: the partition named in the index, where Citus routes by it.
-- $1-$10 as record
INSERT INTO traces (id, tenant, queue_id, partition_id, transaction_id, "offset",
                    event_type, data, consumer_group, worker_id, trace_names)
SELECT $1, p.tenant, p.queue_id, p.id, $5, x."offset", $6, $7, $8, $9, $10
  FROM partitions p JOIN tx_index x ON x.hash = $4
   AND x.partition_id = $2 -- (variant)
 WHERE p.id = $2 AND p.tenant = $3
   AND (SELECT s.base_offset <= x."offset" FROM segments s
         WHERE s.partition_id = p.id AND s.end_offset >= x."offset"
         ORDER BY s.end_offset LIMIT 1)

-- name: record_at
-- Records trace $1 of the message at offset $4 of the tenant's partition $2: for a message
-- found without the index.
-- $1 trace id, $2 partition id, $3 tenant, $4 offset, $5-$10 as record
INSERT INTO traces (id, tenant, queue_id, partition_id, transaction_id,
                    "offset", event_type, data, consumer_group, worker_id,
                    trace_names)
SELECT $1, p.tenant, p.queue_id, p.id, $5, $4, $6, $7, $8, $9, $10
  FROM partitions p WHERE p.id = $2 AND p.tenant = $3

-- name: record_requeued
-- One trace of event type $2 on each copy a requeue appended, under the dead letter's
-- consumer group, its data naming the dead letter and the original message.
-- $1 tenant, $2 event type, then one array element per copy: $3 trace ids, $4 partition ids,
-- $5 index hashes, $6 transaction ids, $7 dead-letter ids, $8 original message ids,
-- $9 original transaction ids, $10 consumer groups, $11 reasons
INSERT INTO traces (id, tenant, queue_id, partition_id, transaction_id, "offset",
                    event_type, data, consumer_group, worker_id, trace_names)
SELECT c.id, p.tenant, p.queue_id, p.id, c.txid, x."offset", $2,
       jsonb_build_object('deadLetterId', c.dead_letter,
                          'originalMessageId', c.message_id,
                          'originalTransactionId', c.original_txid,
                          'consumerGroup', c.consumer_group,
                          'reason', c.reason),
       c.consumer_group, NULL, '{}'
  FROM unnest($3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::bigint[],
              $8::uuid[], $9::text[], $10::text[], $11::text[])
       AS c(id, partition_id, hash, txid, dead_letter, message_id, original_txid,
            consumer_group, reason)
  JOIN partitions p ON p.id = c.partition_id AND p.tenant = $1
  JOIN tx_index x ON x.hash = c.hash

-- name: record_requeued_citus
-- variant of: record_requeued
-- $1-$11 as record_requeued
INSERT INTO traces (id, tenant, queue_id, partition_id, transaction_id, "offset",
                    event_type, data, consumer_group, worker_id, trace_names)
SELECT c.id, p.tenant, p.queue_id, p.id, c.txid, x."offset", $2,
       jsonb_build_object('deadLetterId', c.dead_letter,
                          'originalMessageId', c.message_id,
                          'originalTransactionId', c.original_txid,
                          'consumerGroup', c.consumer_group,
                          'reason', c.reason),
       c.consumer_group, NULL, '{}'
  FROM unnest($3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::bigint[],
              $8::uuid[], $9::text[], $10::text[], $11::text[])
       AS c(id, partition_id, hash, txid, dead_letter, message_id, original_txid,
            consumer_group, reason)
  JOIN partitions p ON p.id = c.partition_id AND p.tenant = $1
  JOIN tx_index x ON x.hash = c.hash
   AND x.partition_id = p.id -- (variant)

-- name: of_message
-- The traces of one message, oldest first.
-- $1 partition id, $2 transaction id, $3 tenant
SELECT id, partition_id, transaction_id, event_type, data, consumer_group,
       worker_id, trace_names, created_at
  FROM traces
 WHERE partition_id = $1 AND transaction_id = $2 AND tenant = $3
 ORDER BY created_at, id

-- name: count_by_name
-- How many of the tenant's traces carry the names.
-- $1 tenant, $2 trace names
SELECT count(*) AS total FROM traces WHERE tenant = $1 AND trace_names @> $2

-- name: by_name
-- A page of the tenant's traces carrying the names, newest first, each with the segment that
-- holds its message (NULL once the log no longer holds it; the message is read out of it in
-- crate::traces).
-- $1 tenant, $2 trace names, $3 limit, $4 offset
SELECT t.id, t.partition_id, t.transaction_id, t.event_type, t.data,
       t.consumer_group, t.worker_id, t.trace_names, t.created_at,
       q.name AS queue, p.name AS partition, s.base_offset, s.frames,
       t."offset"
  FROM traces t
  JOIN partitions p ON p.id = t.partition_id
  JOIN queues q ON q.id = t.queue_id
  LEFT JOIN LATERAL (
       SELECT base_offset, frames FROM segments
        WHERE partition_id = t.partition_id AND end_offset >= t."offset"
        ORDER BY end_offset LIMIT 1) s ON s.base_offset <= t."offset"
 WHERE t.tenant = $1 AND t.trace_names @> $2
 ORDER BY t.created_at DESC, t.id DESC
 LIMIT $3 OFFSET $4

-- name: count_names
-- How many distinct trace names the tenant's traces carry.
-- $1 tenant
SELECT count(DISTINCT n) AS total FROM traces, unnest(trace_names) AS n
 WHERE tenant = $1

-- name: names
-- A page of the tenant's trace names, most recently seen first, each with its traces and the
-- messages they are of.
-- $1 tenant, $2 limit, $3 offset
SELECT n AS name, count(*) AS traces,
       count(DISTINCT (partition_id, transaction_id)) AS messages,
       max(created_at) AS last_seen
  FROM traces, unnest(trace_names) AS n
 WHERE tenant = $1
 GROUP BY n
 ORDER BY last_seen DESC, n
 LIMIT $2 OFFSET $3
