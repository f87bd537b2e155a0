-- Maintenance switches (spec §15), one row per tenant that has ever set one. Every broker
-- of the database polls them, so a switch is seen everywhere within the poll interval.
CREATE TABLE maintenance (
    tenant      text PRIMARY KEY,
    push        boolean NOT NULL DEFAULT false,
    pop         boolean NOT NULL DEFAULT false,
    changed_at  timestamptz NOT NULL DEFAULT now()
);

-- Pushes accepted while push maintenance is on: framed, deduplicated, held here (never on a
-- broker's disk) and appended in arrival order when it ends. `hash` is the transaction
-- index's key of (partition, transaction id): one buffered message per key.
CREATE TABLE push_buffer (
    seq           bigserial PRIMARY KEY,
    tenant        text NOT NULL,
    partition_id  uuid NOT NULL,
    hash          uuid NOT NULL UNIQUE,
    frame         bytea NOT NULL,
    received_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX push_buffer_drain_order ON push_buffer (tenant, seq);
