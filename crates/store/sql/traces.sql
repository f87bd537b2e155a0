-- Traces of messages (crate::traces). Statements still inline in traces.rs move here as they
-- change.

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
