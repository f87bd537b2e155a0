-- A pop claims the least recently claimed partitions of (queue, group) first. With the
-- queue on the cursor row and an index in claim order, the claim walks cursors in that order
-- and stops after the few it needs, instead of reading and sorting every partition of the
-- queue (which is what made a 10,000-partition queue slow to pop).
ALTER TABLE cursors ADD COLUMN queue_id uuid;
UPDATE cursors c SET queue_id = p.queue_id FROM partitions p WHERE p.id = c.partition_id;
ALTER TABLE cursors ALTER COLUMN queue_id SET NOT NULL;
CREATE INDEX cursors_claim_order
    ON cursors (queue_id, consumer_group, lease_expires_at NULLS FIRST, partition_id);
