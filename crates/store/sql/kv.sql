-- Key/value rows (crate::kv, table `kv`): one per (tenant, namespace, key), the value as the
-- client's JSON text. A write locks its row first (lock), the service decides, then a write or
-- remove; reads see only live rows (not past `expires_at`), so an expired row is absent before
-- it is pruned. Every statement names its namespace: on Citus, one shard's. Each `-- name:`
-- section is one statement, exactly as sent (crates/store/build.rs); one marked
-- `-- variant of: <name>` differs from that one only in lines that end with `-- (variant)`.

-- name: lock
-- The row at the key, expired or not, locked until the transaction ends.
-- $1 tenant, $2 namespace, $3 key
SELECT key, value, version, expires_at, updated_at,
       (expires_at IS NOT NULL AND expires_at <= now()) AS expired
  FROM kv WHERE tenant = $1 AND ns = $2 AND key = $3 FOR UPDATE

-- name: get
-- The live rows among the keys of a namespace, in no particular order.
-- $1 tenant, $2 namespace, $3 keys
SELECT key, value, version, expires_at, updated_at,
       (expires_at IS NOT NULL AND expires_at <= now()) AS expired
  FROM kv
 WHERE tenant = $1 AND ns = $2 AND key = ANY ($3::text[])
   AND (expires_at IS NULL OR expires_at > now())

-- name: range
-- A page of a namespace's live rows whose keys start with a prefix: keys from $3 on (bytewise,
-- no upper end) and past $4, in key order, at most $5; with $6, only the keys (each value
-- left out: empty).
-- $1 tenant, $2 namespace, $3 the prefix (the range's lower end), $4 the last key of the
-- previous page, $5 limit, $6 keys only
SELECT key, CASE WHEN $6 THEN '' ELSE value END AS value, version, expires_at, updated_at,
       (expires_at IS NOT NULL AND expires_at <= now()) AS expired
  FROM kv
 WHERE tenant = $1 AND ns = $2 AND key >= $3 AND key > $4
   AND (expires_at IS NULL OR expires_at > now())
 ORDER BY key LIMIT $5

-- name: range_until
-- variant of: range
-- range with an upper end: keys in [$3, $7). A variant, not `$7 IS NULL OR key < $7`, so
-- that the upper end bounds the index scan: a generic plan would read every key past a
-- prefix's end to fill the page.
-- $1-$6 as range, $7 the range's upper end (exclusive)
SELECT key, CASE WHEN $6 THEN '' ELSE value END AS value, version, expires_at, updated_at,
       (expires_at IS NOT NULL AND expires_at <= now()) AS expired
  FROM kv
 WHERE tenant = $1 AND ns = $2 AND key >= $3 AND key > $4
   AND key < $7 -- (variant)
   AND (expires_at IS NULL OR expires_at > now())
 ORDER BY key LIMIT $5

-- name: update_with_expiry
-- Writes the locked row at the key with a new expiry: $6 seconds from now, or forever when $6
-- is NULL (`now() + NULL` is NULL; Citus allows no `now()` inside a CASE). Returns the row it
-- wrote, live by construction (Citus allows no `now()` in a RETURNING clause).
-- $1 tenant, $2 namespace, $3 key, $4 value (JSON text), $5 version, $6 ttl seconds (NULL:
-- forever)
UPDATE kv SET value = $4, version = $5,
              expires_at = now() + make_interval(secs => $6::bigint), -- (variant)
              updated_at = now()
 WHERE tenant = $1 AND ns = $2 AND key = $3
 RETURNING key, value, version, expires_at, updated_at, false AS expired

-- name: update
-- variant of: update_with_expiry
-- update_with_expiry keeping the row's expiry.
-- $1 tenant, $2 namespace, $3 key, $4 value (JSON text), $5 version
UPDATE kv SET value = $4, version = $5,
              updated_at = now()
 WHERE tenant = $1 AND ns = $2 AND key = $3
 RETURNING key, value, version, expires_at, updated_at, false AS expired

-- name: insert
-- Inserts the row at the key, expiring as update_with_expiry says; no row when another
-- transaction inserted it first (the caller locks it and decides again).
-- $1 tenant, $2 namespace, $3 key, $4 value (JSON text), $5 version, $6 ttl seconds (NULL:
-- forever)
INSERT INTO kv (tenant, ns, key, value, version, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::bigint))
ON CONFLICT (tenant, ns, key) DO NOTHING
RETURNING key, value, version, expires_at, updated_at, false AS expired

-- name: remove
-- Deletes the row at the key (locked by lock).
-- $1 tenant, $2 namespace, $3 key
DELETE FROM kv WHERE tenant = $1 AND ns = $2 AND key = $3

-- name: prune_due
-- Up to $1 rows past their expiry, the longest expired first, per namespace: found first and
-- deleted per namespace (prune), so on Citus every delete is one shard's.
-- $1 rows at most
SELECT tenant, ns, array_agg(key) AS keys FROM (
    SELECT tenant, ns, key FROM kv WHERE expires_at <= now()
     ORDER BY expires_at LIMIT $1) d
 GROUP BY tenant, ns

-- name: prune
-- Deletes a namespace's rows prune_due found, those still past their expiry: a row written
-- again meanwhile is not past its expiry any more and stays.
-- $1 tenant, $2 namespace, $3 keys
DELETE FROM kv WHERE tenant = $1 AND ns = $2 AND key = ANY ($3::text[])
   AND expires_at <= now()
