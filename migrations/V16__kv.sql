-- Key/value (`POST /api/v1/kv`, and the transaction route's `kv` rider): one row per
-- (tenant, namespace, key). The value is the client's JSON text; `version` counts the writes
-- of the row's present life (an expired row written again starts at 1); `expires_at` is NULL
-- for a row written `forever`. A row past `expires_at` is absent to every read and write
-- (docs/design/kv.md) and pruned on the retention clock. Distributed by `ns` on Citus, so a
-- namespace's reads and writes, prefix reads included, are one shard's.
-- Keys compare bytewise (COLLATE "C"), so a prefix is one range of the primary key.
CREATE TABLE kv (
    tenant      text NOT NULL,
    ns          text NOT NULL,
    key         text COLLATE "C" NOT NULL,
    value       text NOT NULL,
    version     bigint NOT NULL,
    expires_at  timestamptz,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, ns, key)
);
CREATE INDEX kv_expiring ON kv (expires_at) WHERE expires_at IS NOT NULL;
