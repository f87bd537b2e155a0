-- Trace events: free-form records a consumer attaches to a message (spec §12). A row names
-- its message by (partition, transaction id) as the client does, and keeps the offset the
-- id resolved to, so that the message's payload can be read beside it and retention can drop
-- the traces of messages it deletes. The tenant is on the row: every read is scoped by it.
CREATE TABLE traces (
    id              uuid PRIMARY KEY,
    tenant          text NOT NULL,
    queue_id        uuid NOT NULL,
    partition_id    uuid NOT NULL,
    transaction_id  text NOT NULL,
    "offset"        bigint NOT NULL,
    event_type      text NOT NULL,
    data            jsonb NOT NULL,
    consumer_group  text NOT NULL,
    worker_id       text,
    trace_names     text[] NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX traces_of_message ON traces (partition_id, transaction_id, created_at);
CREATE INDEX traces_by_queue ON traces (queue_id);
CREATE INDEX traces_by_name ON traces USING gin (trace_names);
