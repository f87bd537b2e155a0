#!/usr/bin/env bash
# The deduplication structures of issue 35, side by side on one `regent dev` cluster: what
# keeping a window of transaction ids costs, the purge included, with nothing else running.
#
#   btree     what Regent keeps (migration V3): tx_index (hash uuid PRIMARY KEY, offset,
#             created_at); an append inserts its hashes and lets the primary key find a
#             duplicate (no lookup); the purge deletes expired entries in slices of 10,000,
#             as the broker's purge clock does, every second; autovacuum reclaims.
#   timepart  the same rows in a table partitioned by created_at, one partition per SPAN
#             seconds, each with its own unique index on hash: an append inserts into the
#             newest partition (its unique index finds a duplicate there) and must look its
#             hashes up in the older partitions the window still covers (no unique
#             constraint spans partitions); the purge drops whole partitions past the window.
#
# Each client transaction appends 100 random hashes, as one push of 100 messages to one
# partition does. Rounds alternate the order; each structure gets a fresh database.
#   ROUNDS=2 DURATION=60 WINDOW=10 SPAN=5 CLIENTS=8 bench/dedup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2} DURATION=${DURATION:-60} WINDOW=${WINDOW:-10} SPAN=${SPAN:-5}
CLIENTS=${CLIENTS:-8} PORT=${PORT:-6680}

. bench/lib.sh
trap stop_dev EXIT
start_dev "$PORT"
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

schema_btree='
CREATE TABLE tx_index (hash uuid PRIMARY KEY, "offset" bigint NOT NULL, created_at timestamptz NOT NULL);
CREATE INDEX ON tx_index USING brin (created_at);
ALTER TABLE tx_index SET (autovacuum_vacuum_insert_scale_factor = 0.05);
CREATE FUNCTION purge(w float8) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  LOOP
    DELETE FROM tx_index WHERE ctid = ANY (ARRAY(SELECT ctid FROM tx_index
      WHERE created_at < now() - make_interval(secs => w) LIMIT 10000));
    GET DIAGNOSTICS n = ROW_COUNT;
    EXIT WHEN n < 10000;
  END LOOP;
END $$;'
append_btree="INSERT INTO tx_index (hash, \"offset\", created_at)
SELECT gen_random_uuid(), g, clock_timestamp() FROM generate_series(1, 100) g;"

# Partition k holds [k*SPAN, (k+1)*SPAN) seconds since the epoch.
schema_timepart="
CREATE TABLE tx_index (hash uuid NOT NULL, \"offset\" bigint NOT NULL, created_at timestamptz NOT NULL)
  PARTITION BY RANGE (created_at);
CREATE FUNCTION purge(w float8) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE k bigint := floor(extract(epoch FROM now()) / $SPAN); p record;
BEGIN
  FOR i IN 0 .. 2 LOOP
    IF to_regclass('tx_index_' || (k + i)) IS NULL THEN
      EXECUTE format('CREATE TABLE tx_index_%s PARTITION OF tx_index FOR VALUES FROM (%L) TO (%L)',
                     k + i, to_timestamp((k + i) * $SPAN), to_timestamp((k + i + 1) * $SPAN));
      EXECUTE format('CREATE UNIQUE INDEX ON tx_index_%s (hash)', k + i);
    END IF;
  END LOOP;
  FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'tx_index'::regclass LOOP
    IF (substr(p.relname, 10)::bigint + 1) * $SPAN < extract(epoch FROM now()) - w THEN
      EXECUTE format('DROP TABLE %I', p.relname);
    END IF;
  END LOOP;
END \$\$;"
append_timepart="WITH a AS (SELECT gen_random_uuid() AS hash, g FROM generate_series(1, 100) g),
     t AS (SELECT clock_timestamp() AS now)
INSERT INTO tx_index (hash, \"offset\", created_at)
SELECT a.hash, a.g, t.now FROM a, t
 WHERE NOT EXISTS (SELECT 1 FROM tx_index x
                    WHERE x.hash = a.hash
                      AND x.created_at > t.now - make_interval(secs => $WINDOW)
                      AND x.created_at < to_timestamp(floor(extract(epoch FROM t.now) / $SPAN) * $SPAN));"

run() { # run STRUCTURE ROUND
    local s=$1 db="dedup_$1_$2" schema append
    schema="schema_$1" append="append_$1"
    psql "$PG" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    local url=${PG%/*}/$db
    psql "$url" -c "${!schema}" -c "SELECT purge($WINDOW)" >/dev/null
    echo "${!append}" >"$work/$s.sql"
    local stop="$work/purging.$s" purge_ms=0
    touch "$stop"
    ( while [ -e "$stop" ]; do
          local t0=$(date +%s%N)
          psql "$url" -c "SELECT purge($WINDOW)" >/dev/null
          echo $(( ($(date +%s%N) - t0) / 1000000 )) >>"$work/purge-$s-$2.ms"
          sleep 1
      done ) &
    local purger=$!
    local c0 c1
    c0=$(cluster_cpu "$broker" "$work/pg" | cut -d' ' -f2)
    "$pgbench" -n -M prepared -P 10 -c "$CLIENTS" -j 2 -T "$DURATION" -f "$work/$s.sql" "$url" >"$work/$s-$2.txt" 2>&1
    c1=$(cluster_cpu "$broker" "$work/pg" | cut -d' ' -f2)
    rm -f "$stop"
    wait "$purger"
    local tps lat sd live bytes
    tps=$(awk '/^tps/ {print $3}' "$work/$s-$2.txt")
    lat=$(awk '/^latency average/ {print $4}' "$work/$s-$2.txt")
    sd=$(awk '/^latency stddev/ {print $4}' "$work/$s-$2.txt")
    read -r live bytes < <(psql "$url" -At -F ' ' -c "SELECT count(*),
        (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
          WHERE c.relname LIKE 'tx_index%' AND c.relkind IN ('r', 'p'))
        FROM tx_index")
    purge_ms=$(awk '{t += $1; n++} END {printf "%.0f ms in %d runs", t, n}' "$work/purge-$s-$2.ms")
    printf '%-9s round %s: %8.0f msg/s appended (latency %s ms, sd %s), postgres cpu %.1f s, live %s entries, %s B on disk (%.0f B/entry), purge %s\n' \
        "$s" "$2" "$(echo "$tps * 100" | bc)" "$lat" "$sd" "$(echo "$c1 - $c0" | bc)" \
        "$live" "$bytes" "$(echo "$bytes / ($live + 1)" | bc)" "$purge_ms" | tee -a "$work/results"
    psql "$PG" -c "DROP DATABASE $db"
}

echo "window ${WINDOW} s, partitions of ${SPAN} s, ${CLIENTS} clients, ${DURATION} s per run"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then order="btree timepart"; else order="timepart btree"; fi
    for s in $order; do run "$s" "$r"; done
done
echo; cat "$work/results"
